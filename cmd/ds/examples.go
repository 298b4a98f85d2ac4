package main

// An example is one use of a command, shown under EXAMPLES in the
// command's help (ds CMD --help, ds help CMD) and in man/ds.1.
type example struct {
	// Command is a shell command line as typed. A long one is split over
	// lines that end in " \" or "|"; each line is shown as written,
	// indented, so it must fit in 74 columns.
	Command string
	// Explanation says what the command does and why, in a sentence or
	// two ending in a colon (wrapped to the help width).
	Explanation string
}

// examples holds the examples of each command, by its path below ds
// ("log", "completion bash"). A command that does not exist (yet) is not
// looked up, so the table may describe commands still being built; every
// command that exists must have at least one (TestEveryCommandHasExamples).
var examples = map[string][]example{
	"wrap": {
		{"ds wrap -o run.dss -- make test",
			"Run a command exactly as usual (same output, same exit status; signals reach it) and record its stdout, stderr and lifecycle into run.dss:"},
		{"ds wrap -- go build -v ./...",
			"Record under a name made of the label and the time (go-TIME.dss here), printed on stderr:"},
		{"ds wrap --pty -o ls.dss -- ls --color=auto",
			"Run the command on a pseudo-terminal, so that it colours and line-buffers its output as in a terminal:"},
		{"ds wrap --backpressure -o cat.dss -- cat huge.log",
			"Never drop output: when the capture cannot keep up, slow the command down as a pipe would:"},
		{"ds wrap --host 1s -o train.dss -- python train.py",
			"Sample CPU, memory, network and GPUs every second into the command's own stream, beside its output:"},
		{"ds wrap -o run.dss -o nats://nats.lab:4222/ds -- make test",
			"Record into run.dss and publish the same stream to a JetStream server; a slow or dead server costs only the NATS copy, never the file or the command:"},
	},
	"emit": {
		{"journalctl -f | ds emit -c sys.journal -o j.dss",
			"Record the lines of another program's output, one frame per line, on the channel sys.journal:"},
		{"tail -F app.jsonl | ds emit -c app.events --content json -o app.dss",
			"Record JSON lines as records that ds log --json, ds series and ds latest parse:"},
		{"journalctl -f | ds emit -c sys.journal -o nats://127.0.0.1:4222/ds",
			"Publish the lines to a NATS server only (ds collect, or a stream made by ds nats init):"},
	},
	"host": {
		{"ds host -o host.dss",
			"Sample CPU, memory, network and GPUs every second into host.dss until Ctrl-C:"},
		{"ds host --interval 100ms --duration 60s --cpu --net -o h.dss",
			"Sample only the CPUs and the network, ten times a second, for a minute:"},
		{"ds series host.cpu -f host.total_percent -f host.iowait_percent \\\n  -o csv h.dss",
			"Print the host's busy and iowait percentages as CSV, one row per sample:"},
		{"ds series host.net -f 'interfaces.#(name==\"eth0\").rx_bytes_per_s' h.dss",
			"Print eth0's receive rate in bytes per second:"},
		{"ds host --gpu --interval 1s -o - | ds log -",
			"Watch the GPUs' records as they are taken (one per second):"},
		{"ds host --interval 1s -o nats://nats.lab:4222/ds",
			"Publish host samples to the fleet's JetStream server, no file kept:"},
	},
	"log": {
		{"ds log run.dss | grep FAIL",
			"Print a capture, one line per text line, and keep the failures:"},
		{"ds log -c proc.make.stderr run.dss",
			"Show one channel (or every channel under a prefix: -c 'proc.*'):"},
		{"ds log --cat -c proc.make.stdout run.dss > out.txt",
			"Get back the command's stdout, byte for byte as it was written:"},
		{"ds log --json run.dss |\n  jq -r 'select(.channel==\"proc.make.lifecycle\") | .record.event'",
			"Lossless NDJSON for other programs; here, the lifecycle events of the command:"},
		{"ds log -g 'error|fail' run.dss",
			"Only the lines that match a regular expression; a pattern without capitals ignores case (smart case):"},
		{"ds log --since -10m run.dss",
			"Only what arrived in the last ten minutes (frame times come from the capture's datastream.clock records):"},
		{"ds log -f captures/",
			"Follow every capture in a directory, printing frames as their writers add them, until Ctrl-C:"},
		{"ds log -c proc.make.stderr nats://nats.lab:4222/ds",
			"Print what the fleet's producers published, from the stream the server keeps:"},
	},
	"tail": {
		{"ds tail run.dss",
			"The last 10 lines ds log would print, read from the end of the capture (as fast for 10 GiB as for 10 KiB):"},
		{"ds tail -n 3 --cat -c proc.make.stderr run.dss",
			"The last 3 lines of the command's stderr, as bytes:"},
		{"ds tail -f run.dss",
			"Keep printing lines as ds wrap adds them to the capture, as tail -f does:"},
		{"ds tail --cursor-file .cursor run.dss",
			"Print only what is new since the last run with the same cursor file (for a cron job):"},
		{"ds tail -f --node ci-7 nats://nats.lab:4222/ds",
			"Print the last lines of node ci-7's streams on the server, then follow them as they are published:"},
	},
	"info": {
		{"ds info run.dss",
			"What is in a capture: streams, channels, gaps, drops, damage and how the command exited, read from the segment summaries:"},
		{"ds info --scan run.dss",
			"The same, checking every record and its CRC instead of trusting the summaries:"},
		{"ds info --json run.dss | jq '.streams[0].exits'",
			"The same as one JSON document, for scripts:"},
	},
	"gaps": {
		{"ds gaps run.dss",
			"Every loss in the inputs, each with its reason (a gap in the positions, frames dropped by the writer, damaged bytes):"},
		{"ds gaps --check run.dss",
			"In CI: exit 4 when anything of this input was lost or conflicts, 0 otherwise:"},
		{"ds gaps --json run.dss",
			"The losses as NDJSON, one object per loss:"},
	},
	"series": {
		{"ds series host.net -o csv -f sample_unix_ms \\\n  -f 'interfaces.#(name==\"eth0\").rx_bytes_per_s' run.dss",
			"A JSON channel as a time series: the bytes per second eth0 received (ds host's own rate, at its read time), as CSV (--field takes gjson paths):"},
		{"ds series app.stats --rate -f requests_total -o csv app.dss",
			"The increase per second of a cumulative counter of your own records:"},
		{"ds series host.cpu --field host.total_percent -o tsv run.dss",
			"CPU use over time, tab-separated, for a plotting tool:"},
	},
	"latest": {
		{"ds latest host.gpu run.dss",
			"The last frame of a channel, for each stream of the inputs:"},
		{"ds latest --json host.cpu host.mem run.dss",
			"The last CPU and memory samples as JSON:"},
	},
	"merge": {
		{"ds merge -o fleet.dss node1/ node2/ node3.dss",
			"Merge the captures of many nodes and lives into one capture, each stream in position order, copies written once:"},
		{"ds merge -o part.dss --node ci-7 -c 'proc.*' run.dss",
			"Cut a capture down to one node's process output:"},
	},
	"check": {
		{"ds check run.dss",
			"Read every record of a capture and say what is damaged, torn or inconsistent, and what each stream holds (exit 3 on any problem):"},
		{"ds check -q captures/ || echo damaged",
			"In a script: print only the problems of every capture in a directory:"},
		{"ds check --json store/ | jq 'select(.kind == \"damage\")'",
			"The findings as NDJSON, here the damaged ranges of every stream of a store:"},
	},
	"recover": {
		{"ds recover -o clean.dss crashed.dss",
			"Save every readable frame of a damaged capture and list what was lost (exit 3 if anything was):"},
	},
	"ingest": {
		{"ds ingest store/ run-*.dss",
			"Store captures in store/ (created if needed), each frame once, however often and in whatever order they arrive:"},
		{"ssh host ds wrap -o - -- ./job | ds ingest store/ -",
			"Store a live stream as it comes, committing at least every second; each line printed is stored for good:"},
		{"ds ingest store/ nats://127.0.0.1:4222/ds",
			"Store what producers publish to the JetStream stream, acknowledging each batch once it is durable; runs until Ctrl-C:"},
		{"ds ingest --idle 5s --durable nightly store/ nats://nats.lab:4222/ds",
			"Store what consumer nightly has not stored yet, then stop after 5 s without a message:"},
	},
	"report": {
		{"ds report -o run.html run.dss",
			"Write one self-contained HTML page of a capture (summary, host charts, the log, search), to open in a browser over file://:"},
		{"ds wrap --host 1s -o ci.dss -- make test; ds report -o ci.html ci.dss",
			"Record a CI job with host samples, and keep the page as the job's artifact:"},
		{"ds report --max-size 2M -o small.html big.dss",
			"Keep the page small: the log's start, end and error lines stay, and the ranges left out are named with the ds log command that prints them:"},
	},
	"trim": {
		{"ds trim store/ --before 10000 --stream ci-7#1732953600123456789",
			"Delete one stream's frames below position 10000 (positions are kept; views say \"trimmed\"):"},
		{"ds trim store/ --before -168h --respect-consumers",
			"Delete what is older than a week, unless a consumer has not read it yet:"},
		{"ds trim store/ --keep-bytes 10GiB -n",
			"Show which oldest chunks would go to bring the store under 10 GiB:"},
	},
	"collect": {
		{"ds collect store/",
			"Take the captures of a fleet without a NATS server of your own: listen on 127.0.0.1:4222 and store what producers publish under ds in store/, until Ctrl-C:"},
		{"DS_NATS_TOKEN=s3cret ds collect store/ --listen 0.0.0.0:4222",
			"Take producers of other machines, which must present the token (they set DS_NATS_TOKEN too):"},
		{"ds wrap -o nats://collector:4222/ds -- make test",
			"On a machine of the fleet: publish a command's capture to the collector:"},
		{"ds log store/",
			"Read what was collected, as any store:"},
	},
	"nats": {
		{"ds nats init nats://10.0.0.5:4222/ds",
			"Create the JetStream stream that keeps what producers publish under the prefix ds (for 7 days, at most 10 GiB):"},
		{"ds nats status nats://10.0.0.5:4222/ds",
			"What the stream holds, and how far each ingester has read:"},
	},
	"nats init": {
		{"ds nats init nats://10.0.0.5:4222/ds",
			"Create the stream of the prefix ds with the default limits (messages kept 7 days, at most 10 GiB):"},
		{"ds nats init nats://10.0.0.5:4222/ds --max-age 30d --max-bytes 100GiB",
			"Set other limits (the stream exists: it is updated):"},
		{"ds nats init nats://n1:4222,n2:4222,n3:4222/ds --replicas 3",
			"On a cluster of three servers, keep each message on all three:"},
	},
	"nats status": {
		{"ds nats status nats://10.0.0.5:4222/ds",
			"The stream's messages, bytes, first and last message times, streams, limits and consumers:"},
		{"ds nats status --json nats://10.0.0.5:4222/ds |\n  jq '.consumers[] | {name, pending}'",
			"How many messages each consumer has yet to read, for monitoring:"},
	},
	"completion": {
		{"source <(ds completion bash)",
			"Complete ds's commands, flags and files in bash (add the line to ~/.bashrc):"},
		{"source <(ds completion zsh)",
			"The same in zsh (add the line to ~/.zshrc, after compinit):"},
		{"ds completion fish > ~/.config/fish/completions/ds.fish",
			"The same in fish:"},
	},
	"help": {
		{"ds help log",
			"The usage, description, examples and options of ds log (what ds log --help prints):"},
	},
}
