'use strict';
/**
 * Alibaba's ali-ons (the RocketMQ 4.x Node client, pinned in package.json) against a nameserver
 * and broker; the Node half of tests/test_compat_node.py.
 *
 *   node compat.js --namesrv 127.0.0.1:9876 --prefix ons1 [--count 30] [--timeout 60]
 *
 * Topics <prefix>_main, <prefix>_retry, <prefix>_delay and %RETRY%<prefix>_retry must exist
 * (run_node_compat.py creates them). Checks: sync sends with tags and keys; a `*` group and a
 * `TagA || TagB` group each get exactly their messages; a handler that answers ACTION_RETRY once
 * gets the message back with reconsumeTimes 1; delay level 1 is not delivered before it is due.
 * ali-ons has no batch send and no orderly consumer, so neither is checked.
 * The last stdout line is a JSON summary; exit 0 = passed, 1 = a check failed, 2 = setup error.
 */
const { Producer, Consumer, Message } = require('ali-ons');

const TAGS = [ 'TagA', 'TagB', 'TagC' ];

function parseArgs(argv) {
  const args = { count: 30, timeout: 60, delayLevel1Ms: 1000 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    args[key.replace(/-(\w)/g, (_, c) => c.toUpperCase())] = argv[i + 1];
  }
  if (!args.namesrv || !args.prefix) {
    throw new Error('usage: node compat.js --namesrv HOST:PORT --prefix NAME [--count N] [--timeout S]');
  }
  args.count = Number(args.count);
  args.timeout = Number(args.timeout);
  args.delayLevel1Ms = Number(args.delayLevel1Ms);
  return args;
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

async function waitFor(timeoutS, done) {
  const deadline = Date.now() + timeoutS * 1000;
  while (Date.now() < deadline) {
    if (done()) return true;
    await sleep(50);
  }
  return done();
}

// A quiet logger: the client logs every pull at info level, and warns on every rebalance of a
// group whose %RETRY% topic nobody created (normal: the broker creates it on the first retry).
const logger = {
  debug() {}, info() {},
  warn(...a) {
    const line = require('util').format(...a);
    if (!/topic\[%RETRY%[^\]]*\] not exist/.test(line)) process.stderr.write(`WARN ${line}\n`);
  },
  error(...a) { process.stderr.write(`ERROR ${require('util').format(...a)}\n`); },
};

// ali-ons insists on an HTTP client (for Aliyun's name-server lookup) even with nameSrv set.
const httpclient = {
  async request() { throw new Error('no HTTP name-server lookup: nameSrv is set'); },
};

function clientOptions(args, extra) {
  return Object.assign({ nameSrv: args.namesrv, httpclient, logger,
    instanceName: `${args.prefix}_${process.pid}` }, extra);
}

function newConsumer(args, group, topic, expr, handler) {
  const consumer = new Consumer(clientOptions(args, {
    consumerGroup: `${args.prefix}_${group}`,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
    rebalanceInterval: 1000,
  }));
  consumer.on('error', err => process.stderr.write(`consumer ${group}: ${String(err.message).slice(0, 300)}\n`));
  consumer.subscribe(topic, expr, handler);
  return consumer;
}

// Compare what a group saw (body -> [msg]) with what it should get (body -> tag).
function expectExactly(seen, want, errors, label) {
  let missing = 0, unexpected = 0, duplicates = 0, wrongTag = 0, received = 0;
  for (const [ body, tag ] of want) {
    const got = seen.get(body) || [];
    if (got.length === 0) missing++;
    if (got.length > 1) duplicates += got.length - 1;
    if (got.length && got[0].tags !== tag) wrongTag++;
  }
  for (const [ body, got ] of seen) {
    received += got.length;
    if (!want.has(body)) unexpected++;
  }
  if (missing) errors.push(`${label}: ${missing} of ${want.size} messages missing`);
  if (unexpected) errors.push(`${label}: ${unexpected} unexpected messages`);
  if (duplicates) errors.push(`${label}: ${duplicates} duplicate deliveries`);
  if (wrongTag) errors.push(`${label}: ${wrongTag} messages with the wrong tag`);
  return { expected: want.size, received, missing, unexpected, duplicates, wrongTag };
}

function record(map, msg) {
  const body = msg.body.toString();
  if (!map.has(body)) map.set(body, []);
  map.get(body).push(msg);
}

async function run(args, summary) {
  const producer = new Producer(clientOptions(args, { producerGroup: `${args.prefix}_p` }));
  await producer.ready();
  const consumers = [];
  try {
    // ---- sync sends, then a `*` group and a tag-filtered group
    const main = `${args.prefix}_main`;
    const all = new Map();
    for (let i = 0; i < args.count; i++) {
      const tag = TAGS[i % TAGS.length];
      const body = `${args.prefix}-sync-${i}`;
      const msg = new Message(main, tag, body);
      msg.keys = [ body ];
      msg.properties.seq = String(i);
      const result = await producer.send(msg);
      if (result.sendStatus !== 'SEND_OK') summary.errors.push(`send ${body}: ${result.sendStatus}`);
      all.set(body, tag);
    }
    const tagged = new Map([ ...all ].filter(([ , tag ]) => tag === 'TagA' || tag === 'TagB'));
    const groups = [[ 'all', '*', all ], [ 'tagAB', 'TagA || TagB', tagged ]];
    const seen = groups.map(() => new Map());
    groups.forEach(([ name, expr ], i) => {
      consumers.push(newConsumer(args, name, main, expr, async msg => { record(seen[i], msg); }));
    });

    // ---- retry: ACTION_RETRY the first time, the message must come back with reconsumeTimes 1
    const retryTopic = `${args.prefix}_retry`;
    const retrySeen = new Map();
    const retryWant = new Map();
    for (let i = 0; i < 4; i++) {
      const body = `${args.prefix}-retry-${i}`;
      await producer.send(new Message(retryTopic, 'TagR', body));
      retryWant.set(body, 'TagR');
    }
    consumers.push(newConsumer(args, 'retry', retryTopic, '*', async msg => {
      record(retrySeen, msg);
      return msg.reconsumeTimes === 0 ? Consumer.ACTION_RETRY : undefined;
    }));

    // ---- delay level 1
    const delayTopic = `${args.prefix}_delay`;
    const delaySeen = new Map();
    const arrived = new Map();
    const sentAt = new Map();
    const delayWant = new Map();
    consumers.push(newConsumer(args, 'delay', delayTopic, '*', async msg => {
      if (!arrived.has(msg.body.toString())) arrived.set(msg.body.toString(), Date.now());
      record(delaySeen, msg);
    }));
    await Promise.all(consumers.map(c => c.ready()));
    for (let i = 0; i < 4; i++) {
      const body = `${args.prefix}-delay-${i}`;
      const msg = new Message(delayTopic, 'TagD', body);
      msg.delayTimeLevel = 1;
      sentAt.set(body, Date.now());
      await producer.send(msg);
      delayWant.set(body, 'TagD');
    }

    await Promise.all([
      waitFor(args.timeout, () => seen[0].size >= all.size),
      waitFor(args.timeout, () => seen[1].size >= tagged.size),
      waitFor(args.timeout, () => [ ...retryWant.keys() ].every(b => (retrySeen.get(b) || []).length >= 2)),
      waitFor(args.timeout, () => delaySeen.size >= delayWant.size),
    ]);
    await sleep(500); // stragglers: a leaking tag filter, duplicates
    summary.phases.produce = { sent: all.size };
    groups.forEach(([ name, expr, want ], i) => {
      summary.phases[name] = expectExactly(seen[i], want, summary.errors, `group ${name} (${expr})`);
    });
    const times = [];
    for (const body of retryWant.keys()) {
      const got = retrySeen.get(body) || [];
      const rt = got.map(m => m.reconsumeTimes);
      times.push(`${body.split('-').pop()}:${rt.join(',')}`);
      if (rt.join(',') !== '0,1') summary.errors.push(`retry ${body}: reconsumeTimes [${rt}], want [0,1]`);
      got.forEach(m => {
        if (m.topic !== retryTopic) summary.errors.push(`retry ${body} came back on topic ${m.topic}`);
      });
    }
    summary.phases.retry = { reconsumeTimes: times.sort() };
    const delayInfo = expectExactly(delaySeen, delayWant, summary.errors, 'delay');
    const delays = [ ...arrived ].map(([ body, at ]) => at - sentAt.get(body));
    if (delays.length) delayInfo.minDelayMs = Math.min(...delays);
    delays.filter(d => d < args.delayLevel1Ms).forEach(d =>
      summary.errors.push(`delay: consumed after ${d} ms, before level 1 (${args.delayLevel1Ms} ms)`));
    summary.phases.delay = delayInfo;
  } finally {
    await Promise.all(consumers.map(c => c.close().catch(() => {})));
    await producer.close().catch(() => {});
  }
}

async function main() {
  const started = Date.now();
  const summary = { ok: false, client: 'ali-ons', phases: {}, errors: [] };
  let code = 0;
  try {
    const args = parseArgs(process.argv.slice(2));
    summary.prefix = args.prefix;
    await run(args, summary);
    summary.ok = summary.errors.length === 0;
    code = summary.ok ? 0 : 1;
  } catch (err) {
    summary.errors.push(`setup: ${err.stack || err}`);
    code = 2;
  }
  summary.seconds = (Date.now() - started) / 1000;
  process.stdout.write(JSON.stringify(summary) + '\n');
  process.exit(code);
}

main();
