// Package fleet carries datastreams over NATS JetStream: the transport of
// ARCHITECTURE.md §1 for captures that leave the machine, and the consumer that
// ingests them into a store.
//
// # Place in the pipeline
//
//	producer → endpoint → mux → fanout ─┬─ capture file (segments.Writer)
//	                                    └─ Publisher ──► JetStream ──► Ingest → segments.Store → views
//	                                                             └──► Reader (ds log / ds tail nats://…)
//
// A [Publisher] is one more fanout subscriber of a stream's endpoint
// (frames.Subscription), with its own bounded buffer: the capture loop
// hands it every drained batch ([Publisher.Take]), which it copies into DSS
// messages and never waits on the network; a goroutine of its own
// publishes them in order. A server that is slow or unreachable costs only
// this output its copies: when its buffer is full the frames it would have
// sent are counted (frames.Subscription.Lost, so datastream.health shows
// them), and once it delivers again it submits a datastream.transport
// record (frames.TransportRecord) naming the positions it lost and why. The
// copy read back from JetStream thus shows each outage as a gap followed by
// its reason, never as a silent hole; the capture file has every frame.
//
// # Messages
//
// A message is one complete DSS segment (ds-format(5)) of one stream: a
// header with the stream descriptor and the full catalog known when it was
// written, the frames of one or more drain ticks in position order, and a
// summary; the stream's last message also holds StreamEnded. Any consumer
// that starts at any retained message can thus name every frame in it, and
// trimming old messages (the stream's max age or max bytes) never orphans
// a name. Concatenated message bodies are a valid capture, which is how
// [Ingest] and [Reader] feed the store and the views.
//
// Each stream (node, life) has its subject, [Subject]:
// PREFIX.s.NODE.LIFE, the node escaped so that no node name can publish
// into another's subject. Each message carries a Nats-Msg-Id derived from
// its stream and the positions of its first and last frames ([MsgID]), so
// that JetStream stores a retried publish once (within the stream's
// duplicate window; beyond it the store collapses the copy anyway, first
// wins).
//
// # Consumers
//
// [Ingest] runs a durable pull consumer: it fetches a batch, has
// segments.Store.Ingest make it durable, and only then acknowledges its
// messages. A killed ingester loses nothing acknowledged, and what it had
// not acknowledged is delivered again and collapses in the store. Several
// ingesters with one durable name share the work. [NewReader] reads with an
// ephemeral ordered consumer for the views.
//
// # Servers and streams
//
// [Dial] connects to a target as the commands do (a producer keeps trying
// in the background; a reader or an ingester gives up at once), and
// [CheckStreamIfConnected] checks that the prefix has its stream.
// [StartServer] runs nats-server as ds-natsd, a child process (package natsd,
// which ds does not link); [Collect] is ds collect
// (that server, its files in STORE/nats, the stream and an Ingest into
// STORE in one call). [InitStream] creates the JetStream stream with its
// retention limits (ds nats init, described by [DescribeStream]), and
// [StreamStatus] reads what it holds and how far each consumer has read
// (ds nats status, rendered by [Status.Text] or as JSON).
package fleet
