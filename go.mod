module github.com/ds-telemetry/ds

go 1.26

require (
	github.com/creack/pty v1.1.24 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/klauspost/compress v1.18.2 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	github.com/tidwall/gjson v1.20.2 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
	github.com/urfave/cli/v3 v3.14.0 // indirect
	golang.org/x/sys v0.28.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
