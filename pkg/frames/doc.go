// Package frames is the vocabulary and the live pipe of the datastream: the
// data model (streams, channels, positions, frames, descriptors, events), the
// per-stream [Mux] that assigns positions, the stream-local [Catalog] that
// maps channel names to ids, and the [Endpoint] that drains the mux once per
// tick and fans the batch out to subscribers.
//
// It is the first stage of the pipeline (ARCHITECTURE.md §1):
//
//	producers → endpoint/catalog → mux → fanout → transport → ingest → views
//	            └──────────── package frames ───────────┘
//
// Rules this package enforces (spec = shared/seeds/000, "The Datastream"):
//
//   - Payloads are opaque (§1, §9.1.1): nothing here inspects payload bytes.
//   - Positions are assigned at drain time from one counter per stream,
//     monotonic and never reused (§2.3, §4.4).
//   - A full mux queue drops a submission before a position is taken, counts
//     the drop, and never blocks the producer (§4.5).
//   - Channel ids are stream-local and handed out from 1; the same name with
//     the same content yields the same id, the same name with other content
//     is an error (§2.4, §3.3).
//   - The endpoint drains once per tick and broadcasts to every subscriber;
//     each subscriber has its own bounded queue and drop counter, so a slow
//     or gone subscriber never blocks the endpoint or the others (§6.2).
//
// Frames carry no timestamp (§2.1). Time is producer payload: see [Clock]
// and the datastream.clock record.
//
// JSON encodings of the data model follow the seed system's serde spellings
// exactly (ARCHITECTURE.md §2), so catalogs interoperate: a stream descriptor is
// {"stream":{"node":"n1","life":7},"label":null,"origin":"RemoteNode"}, a
// content is "Bytes", "TextStream" or {"JsonRecord":{"schema":"host.cpu"}}.
//
// The package imports only the standard library: no files, no flags, no os.
package frames
