module github.com/ds-telemetry/ds/scripts/readbench

go 1.26.0

require (
	github.com/ds-telemetry/ds v0.0.0
	github.com/foxglove/mcap/go/mcap v1.7.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/pierrec/lz4/v4 v4.1.21 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/stretchr/testify v1.9.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/ds-telemetry/ds => ../..
