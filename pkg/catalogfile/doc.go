// Package catalogfile persists the catalog of a datastream: the stream and
// channel descriptors that give stored frames their names and content classes.
//
// The store keeps frames whole and knows only channel ids (ARCHITECTURE.md rule 7.4); a
// named or typed view needs the descriptors too, so ds keeps them in a
// catalog file next to the frames. In the pipeline (ARCHITECTURE.md §1) this
// package sits beside segments at the ingest/store stage: ingest collects
// descriptors from DSS headers, DSQ1 streams and live events into a
// [Catalog], merges catalogs of several inputs with conflict detection, and
// writes the result with [WriteFile]; views read it back with [ReadFile].
// It imports only frames and the standard library; segments may import it,
// never the reverse.
//
// # Rules
//
// A [Catalog] holds at most one descriptor per stream and, within a stream,
// one descriptor per channel id, with each name mapping to one id (seed 000
// §2.4, §3.3). Adding a descriptor that is identical to the one held is a
// no-op; adding one that differs in any field, or that gives a name already
// held by another id, fails with a [*ConflictError] naming both descriptors
// and both sources. A catalog may know channels of a stream whose own
// descriptor it has not seen yet; such a stream is undeclared until
// [Catalog.AddStream] declares it.
//
// # File format
//
// A catalog file is UTF-8 JSON, pretty-printed with two-space indents and
// ending in a newline, in this shape (version 1):
//
//	{
//	  "version": 1,
//	  "streams": [
//	    {
//	      "stream": {"node": "n1", "life": 7},
//	      "label": null,
//	      "origin": "RemoteNode",
//	      "source": "run.dss",
//	      "channels": [
//	        {
//	          "stream": {"node": "n1", "life": 7},
//	          "id": 1,
//	          "name": "host.cpu",
//	          "label": null,
//	          "content": {"JsonRecord": {"schema": "host.cpu"}},
//	          "source": "run.dss"
//	        }
//	      ]
//	    }
//	  ]
//	}
//
// (shown with short objects on one line; the written file puts every field
// on its own line). Each stream entry is the seed's StreamDescriptor
// (ARCHITECTURE.md §2) plus "source" and "channels"; each channel entry is the
// seed's ChannelDescriptor plus "source", so
//
//	jq '.streams[].channels[].name' catalog.json
//	jq -c '.streams[].channels[] | del(.source)' catalog.json
//
// list the channel names and the descriptors in the seed's spelling.
// Streams are sorted by node, then life ([frames.StreamID.Compare]); channels
// by id. Writing the same catalog twice gives the same bytes.
//
// "source" says where an entry came from (an input file name, "-" for
// stdin, or what the caller chose); it is informational and omitted when
// empty. An undeclared stream is written with "origin": null and no
// "source".
//
// Reading is tolerant in the way ARCHITECTURE.md §4 asks of every record: unknown
// fields are ignored, a missing "version" means 1, a missing "origin" means
// RemoteNode, a missing "label" means null, a missing "content" means
// Bytes, a missing channel "stream" means the enclosing entry's stream, and
// a missing or empty "source" means the source given to [Read]. A null is
// read as a missing field, except that "origin": null marks an undeclared
// stream. A stream entry needs
// "stream"; a channel entry needs "id" (not 0) and "name" (not empty).
//
// # Errors
//
// [ErrFormat] wraps every error about the shape of a file: bad JSON (with
// line and column), a missing required field, a channel entry naming
// another stream. [ErrUnknownVersion] is a version other than 1,
// [ErrTooLarge] a file over [MaxFileSize], [ErrInvalid] a descriptor that
// cannot be held (channel id 0, empty name, unknown content or origin), and
// [*ConflictError] (which matches [ErrConflict]) two descriptors that
// disagree. Errors from [Read] locate the problem: [ErrFormat] errors give
// the line and column of bad JSON or the path of the bad field (such as
// "streams[0].channels[2].id"), and the other errors end with the entry's
// path (such as "(at streams[0].channels[2])"). [ReadFile] adds the file
// name: "(in store/catalog.json)".
package catalogfile
