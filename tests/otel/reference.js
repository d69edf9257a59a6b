// The reference: the spans of the known timeline (tests/fixtures/otel-timeline.json), made with
// the official OpenTelemetry JavaScript SDK and sent by its own OTLP/HTTP exporters, so that the
// otel-export plugin's requests can be compared with them field by field.
//
// Written by hand from the documented span model (docs/operators/otel-export.md), not from the
// plugin's code: the ids follow the documented derivation, computed here with Node's crypto.
//
// usage: node reference.js <url> json|protobuf <domain>
'use strict';
const crypto = require('crypto');
const { trace, context, TraceFlags } = require('@opentelemetry/api');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');

const [url, encoding, domain] = process.argv.slice(2);
const { OTLPTraceExporter } = require(encoding === 'json'
  ? '@opentelemetry/exporter-trace-otlp-http'
  : '@opentelemetry/exporter-trace-otlp-proto');

const TASK = 'otel-task';
const sha = (text) => crypto.createHash('sha256').update(text).digest('hex');
const traceId = sha('kuscia-host/trace/v1\n' + TASK).slice(0, 32);
const spanId = (party, entry, incarnation, kind) =>
  sha(['kuscia-host/span/v1', traceId, party, entry, incarnation, kind].join('\n')).slice(0, 16);
// [seconds, nanoseconds] of 2024-05-20T08:00:<s>Z.
const at = (s) => {
  const whole = Math.floor(s);
  return [Date.UTC(2024, 4, 20, 8, 0, whole) / 1000, Math.round((s - whole) * 1e9)];
};
const C = '2024-05-20T08:00:01Z'; // every entry's createTime, its incarnation

// The spans `domain` owes, parents first: [kind, party, entry, name, from, to, attributes,
// parent (the id's arguments), events].
function spansOf(d) {
  const task = { 'kuscia.task.name': TASK };
  const phase = (entry, name, extra = {}) => ({
    ...task, 'kuscia.party': d, 'kuscia.entry': entry, 'kuscia.phase': name, ...extra,
  });
  const crit = { 'kuscia.critical_path': true };
  const pod = d + '/otel-task-0';
  const svc = d + '/otel-task-0-spu';
  const entryParent = (e) => [d, e, C, 'entry'];
  const out = [];
  if (d === 'alice') {
    out.push({ id: ['', '', '', 'task'], name: 'kuscia.task.startup', from: 0, to: 11, attrs: {
      ...task, 'k8s.namespace.name': 'cross-domain', 'kuscia.task.initiator': 'alice',
      'kuscia.task.parties': 'alice,bob', 'kuscia.task.root_end': 'all_ready',
      'kuscia.task.uid': 'task-uid-alice', 'kuscia.job.id': 'otel-job',
      'kuscia.task.last_party': 'alice', 'kuscia.blame.phase': 'pulling', 'kuscia.blame.entry': pod,
    } });
    out.push({ id: [d, '', '', 'party'], parent: ['', '', '', 'task'], name: 'kuscia.party.startup',
      from: 0, to: 11, attrs: { ...task, 'kuscia.party': d, 'kuscia.party.entries': 2,
        'kuscia.blame.phase': 'pulling', 'kuscia.blame.entry': pod } });
    out.push({ id: entryParent(pod), parent: [d, '', '', 'party'], name: 'kuscia.pod.startup',
      from: 1, to: 10, attrs: { ...task, 'kuscia.party': d, 'kuscia.entry': pod,
        'k8s.namespace.name': d, 'k8s.pod.name': 'otel-task-0', 'k8s.pod.uid': 'pod-uid-alice' } });
    out.push({ id: [d, pod, C, 'scheduling'], parent: entryParent(pod), name: 'scheduling', from: 1,
      to: 2, attrs: phase(pod, 'scheduling', crit) });
    out.push({ id: [d, pod, C, 'accepting'], parent: entryParent(pod), name: 'accepting', from: 2,
      to: 3, attrs: phase(pod, 'accepting', crit) });
    out.push({ id: [d, pod, C, 'pulling'], parent: entryParent(pod), name: 'pulling', from: 3,
      to: 7, attrs: phase(pod, 'pulling', { ...crit, 'kuscia.blame': true,
        'kuscia.phase.reason': 'Pulling', 'kuscia.phase.message': 'Pulling image "secretflow"' }),
      events: [{ name: 'Pulling', time: 3.5,
        attrs: { 'kuscia.phase.message': 'Pulling image "secretflow"' } }] });
    out.push({ id: [d, pod, C, 'starting'], parent: entryParent(pod), name: 'starting', from: 7,
      to: 8, attrs: phase(pod, 'starting', crit) });
    out.push({ id: [d, pod, C, 'readiness'], parent: entryParent(pod), name: 'readiness', from: 8,
      to: 10, attrs: phase(pod, 'readiness', crit) });
    out.push({ id: entryParent(svc), parent: [d, '', '', 'party'], name: 'kuscia.service.startup',
      from: 1, to: 11, attrs: { ...task, 'kuscia.party': d, 'kuscia.entry': svc,
        'k8s.namespace.name': d, 'kuscia.service.name': 'otel-task-0-spu' } });
    out.push({ id: [d, svc, C, 'programming'], parent: entryParent(svc), name: 'programming',
      from: 1, to: 11, attrs: phase(svc, 'programming', crit) });
  } else {
    // bob's pod is not ready at the tool's --now (08:00:40) and has waited in readiness longer
    // than stuckAfterSeconds (30): its pending phase goes out with status ERROR; neither the pod
    // nor the party has ended.
    const waitMsg = 'containers with unready status: [secretflow]';
    out.push({ id: [d, pod, C, 'scheduling'], parent: entryParent(pod), name: 'scheduling', from: 1,
      to: 2, attrs: phase(pod, 'scheduling') });
    out.push({ id: [d, pod, C, 'accepting'], parent: entryParent(pod), name: 'accepting', from: 2,
      to: 4, attrs: phase(pod, 'accepting') });
    out.push({ id: [d, pod, C, 'starting'], parent: entryParent(pod), name: 'starting', from: 4,
      to: 5, attrs: phase(pod, 'starting') });
    out.push({ id: [d, pod, C, 'readiness'], parent: entryParent(pod), name: 'readiness', from: 5,
      to: 40, attrs: phase(pod, 'readiness', { 'kuscia.phase.pending': true,
        'kuscia.phase.reason': 'ContainersNotReady', 'kuscia.phase.message': waitMsg }),
      events: [{ name: 'ContainersNotReady', time: 5.5, attrs: { 'kuscia.phase.message': waitMsg } }],
      status: { code: 2, message: 'ContainersNotReady: ' + waitMsg } });
    out.push({ id: entryParent(svc), parent: [d, '', '', 'party'], remote: false,
      name: 'kuscia.service.startup', from: 1, to: 7, attrs: { ...task, 'kuscia.party': d,
        'kuscia.entry': svc, 'k8s.namespace.name': d, 'kuscia.service.name': 'otel-task-0-spu' } });
    out.push({ id: [d, svc, C, 'programming'], parent: entryParent(svc), name: 'programming',
      from: 1, to: 7, attrs: phase(svc, 'programming') });
  }
  return out;
}

// The SDK makes every span itself; its id generator hands out the derived ids in order.
const specs = spansOf(domain);
const ids = specs.map((s) => spanId(...s.id));
let next = 0;
const idGenerator = {
  generateTraceId: () => traceId,
  generateSpanId: () => ids[next++],
};
const exporter = new OTLPTraceExporter({ url });
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({
    'service.name': 'kuscia-host',
    'service.version': '0.1.0',
    'kuscia.domain': domain,
    'kuscia.deployment.mode': 'centralized',
  }),
  idGenerator,
  spanProcessors: [new BatchSpanProcessor(exporter, { maxExportBatchSize: 512 })],
});
const tracer = provider.getTracer('kuscia-host/otel-export', '0.1.0');
for (const s of specs) {
  let ctx = context.active();
  if (s.parent)
    ctx = trace.setSpanContext(ctx, { traceId, spanId: spanId(...s.parent),
      traceFlags: TraceFlags.SAMPLED, isRemote: !!s.remote });
  // kind INTERNAL (0 in the API, 1 on the wire)
  const span = tracer.startSpan(s.name, { kind: 0, startTime: at(s.from), attributes: s.attrs },
    ctx);
  for (const e of s.events || []) span.addEvent(e.name, e.attrs, at(e.time));
  if (s.status) span.setStatus(s.status);
  span.end(at(s.to));
}
provider.forceFlush().then(() => provider.shutdown()).then(
  () => process.exit(0),
  (e) => { console.error(e); process.exit(1); });
