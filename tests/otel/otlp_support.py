"""What the OTLP tests share: a capture server playing an OTLP/HTTP receiver, a decoder of the
binary encoding into the same tree as OTLP/JSON, and the normalisation both are compared in."""
import gzip
import http.server
import json
import struct
import threading
import time

# The OTLP trace messages (opentelemetry-proto, trace/v1 and common/v1): field number ->
# (name, kind, repeated). kind is a message name, or one of the scalar kinds below.
SCHEMA = {
    "Request": {1: ("resourceSpans", "ResourceSpans", True)},
    "ResourceSpans": {1: ("resource", "Resource", False), 2: ("scopeSpans", "ScopeSpans", True),
                      3: ("schemaUrl", "string", False)},
    "Resource": {1: ("attributes", "KeyValue", True), 2: ("droppedAttributesCount", "uint", False)},
    "ScopeSpans": {1: ("scope", "Scope", False), 2: ("spans", "Span", True),
                   3: ("schemaUrl", "string", False)},
    "Scope": {1: ("name", "string", False), 2: ("version", "string", False),
              3: ("attributes", "KeyValue", True), 4: ("droppedAttributesCount", "uint", False)},
    "Span": {1: ("traceId", "hex", False), 2: ("spanId", "hex", False),
             3: ("traceState", "string", False), 4: ("parentSpanId", "hex", False),
             5: ("name", "string", False), 6: ("kind", "uint", False),
             7: ("startTimeUnixNano", "fixed64", False), 8: ("endTimeUnixNano", "fixed64", False),
             9: ("attributes", "KeyValue", True), 10: ("droppedAttributesCount", "uint", False),
             11: ("events", "Event", True), 12: ("droppedEventsCount", "uint", False),
             13: ("links", "Link", True), 14: ("droppedLinksCount", "uint", False),
             15: ("status", "Status", False), 16: ("flags", "fixed32", False)},
    "Event": {1: ("timeUnixNano", "fixed64", False), 2: ("name", "string", False),
              3: ("attributes", "KeyValue", True), 4: ("droppedAttributesCount", "uint", False)},
    "Link": {1: ("traceId", "hex", False), 2: ("spanId", "hex", False),
             3: ("traceState", "string", False), 4: ("attributes", "KeyValue", True),
             5: ("droppedAttributesCount", "uint", False), 6: ("flags", "fixed32", False)},
    "Status": {2: ("message", "string", False), 3: ("code", "uint", False)},
    "KeyValue": {1: ("key", "string", False), 2: ("value", "AnyValue", False)},
    "AnyValue": {1: ("stringValue", "string", False), 2: ("boolValue", "bool", False),
                 3: ("intValue", "int64", False), 4: ("doubleValue", "double", False),
                 5: ("arrayValue", "ArrayValue", False), 6: ("kvlistValue", "KeyValueList", False),
                 7: ("bytesValue", "hex", False)},
    "ArrayValue": {1: ("values", "AnyValue", True)},
    "KeyValueList": {1: ("values", "KeyValue", True)},
    "Response": {1: ("partialSuccess", "PartialSuccess", False)},
    "PartialSuccess": {1: ("rejectedSpans", "int64", False), 2: ("errorMessage", "string", False)},
}


def _varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def decode(data, message="Request"):
    """A binary protobuf message as a dict keyed like OTLP/JSON; unknown fields fail."""
    out, i, schema = {}, 0, SCHEMA[message]
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if number not in schema:
            raise ValueError("%s: unknown field %d" % (message, number))
        name, kind, repeated = schema[number]
        if wire == 0:
            value, i = _varint(data, i)
            if kind == "bool":
                value = bool(value)
            elif kind == "int64" and value >= 1 << 63:
                value -= 1 << 64
        elif wire == 1:
            raw = data[i:i + 8]
            i += 8
            value = struct.unpack("<d" if kind == "double" else "<Q", raw)[0]
        elif wire == 5:
            value = struct.unpack("<I", data[i:i + 4])[0]
            i += 4
        elif wire == 2:
            n, i = _varint(data, i)
            raw = data[i:i + n]
            i += n
            if kind == "string":
                value = raw.decode()
            elif kind == "hex":
                value = raw.hex()
            else:
                value = decode(raw, kind)
        else:
            raise ValueError("%s: wire type %d" % (message, wire))
        if repeated:
            out.setdefault(name, []).append(value)
        else:
            out[name] = value
    return out


INT_FIELDS = {"startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "intValue", "rejectedSpans"}


def normalise(tree, in_value=False):
    """Proto3 semantics for comparing the two encodings: a field at its default is the same as an
    absent one (except the member set in an AnyValue), 64-bit integers are numbers whether sent as
    strings or not, attributes are a map (sorted by key), spans are sorted by id."""
    if isinstance(tree, dict):
        out = {}
        for k, v in tree.items():
            if k in INT_FIELDS and isinstance(v, str):
                v = int(v)
            v = normalise(v, in_value=(k == "value"))
            default = v is None or v is False or (not isinstance(v, bool) and v in (0, "", [], {}))
            if default and not in_value:
                continue
            out[k] = v
        if "attributes" in out:
            out["attributes"] = sorted(out["attributes"], key=lambda a: a["key"])
        if "spans" in out:
            out["spans"] = sorted(out["spans"], key=lambda s: s["spanId"])
        return out
    if isinstance(tree, list):
        return [normalise(v) for v in tree]
    return tree


def request_tree(req):
    """A captured request as the normalised OTLP/JSON tree, whatever its encoding."""
    body = req["body"]
    if req["headers"].get("content-encoding") == "gzip":
        body = gzip.decompress(body)
    if req["headers"].get("content-type", "").startswith("application/json"):
        return normalise(json.loads(body))
    return normalise(decode(body))


def spans_of(trees):
    """(resource, scope, spans) of captured requests, spans merged across them."""
    resources, scopes, spans = [], [], []
    for t in trees:
        for rs in t.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                resources.append(rs.get("resource"))
                scopes.append(ss.get("scope"))
                spans.extend(ss.get("spans", []))
    return resources, scopes, sorted(spans, key=lambda s: s["spanId"])


class Capture:
    """An OTLP/HTTP receiver on 127.0.0.1 that records every request and answers from a script:
    each entry (status, headers, body) serves one request, the last one every request after it.
    ("hang", ...) never answers."""

    def __init__(self, script=None, port=0, tls=None):
        self.requests = []
        self.script = list(script or [(200, {}, b"")])
        self.lock = threading.Lock()
        self.release = threading.Event()
        capture = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        chunk = self.rfile.read(size + 2)[:size]
                        if size == 0:
                            break
                        body += chunk
                else:
                    body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with capture.lock:
                    capture.requests.append({"path": self.path, "at": time.monotonic(), "body": body,
                                             "headers": {k.lower(): v for k, v in self.headers.items()}})
                    answer = capture.script.pop(0) if len(capture.script) > 1 else capture.script[0]
                if answer[0] == "hang":
                    capture.release.wait(60)
                    return
                status, headers, payload = answer
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        if tls:  # (certificate file, key file)
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = "%s://127.0.0.1:%d" % ("https" if tls else "http", self.port)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def trees(self):
        with self.lock:
            return [request_tree(r) for r in self.requests]

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
