#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
// An OTLP/HTTP trace receiver for the tests, decoding with an implementation
// that is not mysqltrace's: the protobuf classes @opentelemetry/otlp-transformer
// generated from the official opentelemetry-proto files (protobufjs).
//
//   otlp_receiver.js --port N --out FILE [--metrics-out MFILE] [--sleep-ms MS]
//                    [--status CODE]
//     serves POST /v1/traces; each request body is decoded and its spans are
//     appended to FILE, one JSON line per span; a body that does not decode
//     is answered 400 and written as {"error": ...}. POST /v1/metrics: an
//     ExportMetricsServiceRequest, decoded the same way, one JSON line per
//     data point appended to MFILE (without --metrics-out: decoded, a body
//     that does not decode written to FILE as an error). --sleep-ms delays
//     every answer (a slow collector), --status answers every request with
//     CODE (after reading it) instead. Prints "listening <port>" on stderr
//     when ready.
//   otlp_receiver.js --decode FILE
//     decodes FILE, one ExportTraceServiceRequest per line (--format otlp),
//     and prints the spans as above.
//
// Decoding is strict: OTLP JSON's hex trace and span ids must have their
// exact length; the message is built with fromObject, checked with verify,
// written back with toObject (64-bit integers as strings, enums as numbers)
// and must equal the input, so an unknown or mistyped field fails; and it
// must survive the binary encoding unchanged.
'use strict';

const http = require('http');
const fs = require('fs');
const assert = require('assert');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');

const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const MetricsRequest = root.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
const toObjectOptions = { longs: String, enums: Number, bytes: String };

// OTLP JSON ids are hex; protobuf JSON's bytes are base64. `to` converts one
// way, checking the length.
function mapIds(req, to) {
    for (const rs of req.resourceSpans || []) {
        for (const ss of rs.scopeSpans || []) {
            for (const span of ss.spans || []) {
                for (const [key, bytes] of [['traceId', 16], ['spanId', 8], ['parentSpanId', 8]]) {
                    if (!(key in span)) {
                        continue;
                    }
                    if (to === 'base64') {
                        const re = new RegExp('^[0-9a-f]{' + 2 * bytes + '}$');
                        if (typeof span[key] !== 'string' || !re.test(span[key])) {
                            throw new Error(`${key} ${JSON.stringify(span[key])} is not ${bytes} bytes of hex`);
                        }
                        span[key] = Buffer.from(span[key], 'hex').toString('base64');
                    } else {
                        span[key] = Buffer.from(span[key], 'base64').toString('hex');
                    }
                }
            }
        }
    }
    return req;
}

function anyValue(v) {
    if ('stringValue' in v) return v.stringValue;
    if ('intValue' in v) return { int: v.intValue };
    if ('doubleValue' in v) return v.doubleValue;
    if ('boolValue' in v) return v.boolValue;
    throw new Error('unexpected AnyValue ' + JSON.stringify(v));
}

function attributes(list) {
    const out = {};
    for (const kv of list || []) {
        if (kv.key in out) {
            throw new Error('attribute ' + kv.key + ' twice');
        }
        out[kv.key] = anyValue(kv.value);
    }
    return out;
}

// Decodes one request body (text); returns flat spans.
function decode(text) {
    const json = JSON.parse(text);
    const input = mapIds(JSON.parse(text), 'base64');
    const message = Request.fromObject(input);
    const problem = Request.verify(message);
    if (problem) {
        throw new Error('verify: ' + problem);
    }
    const back = mapIds(Request.toObject(message, toObjectOptions), 'hex');
    assert.deepStrictEqual(back, json, 'the request does not read back as sent');
    const wire = Request.encode(message).finish();
    const again = mapIds(Request.toObject(Request.decode(wire), toObjectOptions), 'hex');
    assert.deepStrictEqual(again, json, 'the request does not survive the binary encoding');
    const spans = [];
    for (const rs of back.resourceSpans || []) {
        const resource = attributes(rs.resource && rs.resource.attributes);
        for (const ss of rs.scopeSpans || []) {
            for (const s of ss.spans || []) {
                spans.push({
                    resource,
                    scope: ss.scope,
                    traceId: s.traceId,
                    spanId: s.spanId,
                    parentSpanId: s.parentSpanId || '',
                    traceState: s.traceState || '',
                    flags: s.flags || 0,
                    name: s.name,
                    kind: s.kind,
                    start: s.startTimeUnixNano,
                    end: s.endTimeUnixNano,
                    attributes: attributes(s.attributes),
                    events: (s.events || []).map((e) => ({
                        time: e.timeUnixNano,
                        name: e.name,
                        attributes: attributes(e.attributes),
                    })),
                    status: s.status || {},
                });
            }
        }
    }
    return spans;
}

// Decodes one ExportMetricsServiceRequest body (text); returns flat data
// points. Only the histograms mysqltrace sends are expected.
function decodeMetrics(text) {
    const json = JSON.parse(text);
    const message = MetricsRequest.fromObject(JSON.parse(text));
    const problem = MetricsRequest.verify(message);
    if (problem) {
        throw new Error('verify: ' + problem);
    }
    const back = MetricsRequest.toObject(message, toObjectOptions);
    assert.deepStrictEqual(back, json, 'the request does not read back as sent');
    const wire = MetricsRequest.encode(message).finish();
    const again = MetricsRequest.toObject(MetricsRequest.decode(wire), toObjectOptions);
    assert.deepStrictEqual(again, json, 'the request does not survive the binary encoding');
    const points = [];
    for (const rm of back.resourceMetrics || []) {
        const resource = attributes(rm.resource && rm.resource.attributes);
        for (const sm of rm.scopeMetrics || []) {
            for (const m of sm.metrics || []) {
                if (!m.histogram) {
                    throw new Error('metric ' + m.name + ' is not a histogram');
                }
                for (const p of m.histogram.dataPoints || []) {
                    points.push({
                        resource,
                        scope: sm.scope,
                        metric: m.name,
                        unit: m.unit,
                        description: m.description,
                        temporality: m.histogram.aggregationTemporality,
                        attributes: attributes(p.attributes),
                        start: p.startTimeUnixNano,
                        time: p.timeUnixNano,
                        count: p.count,
                        sum: p.sum,
                        min: p.min,
                        max: p.max,
                        bucketCounts: p.bucketCounts,
                        explicitBounds: p.explicitBounds,
                    });
                }
            }
        }
    }
    return points;
}

function lines(spans) {
    return spans.map((s) => JSON.stringify(s) + '\n').join('');
}

function arg(name) {
    const i = process.argv.indexOf(name);
    return i < 0 ? undefined : process.argv[i + 1];
}

if (arg('--decode') !== undefined) {
    let out = '';
    for (const line of fs.readFileSync(arg('--decode'), 'utf8').split('\n')) {
        if (line === '') continue;
        try {
            out += lines(decode(line));
        } catch (e) {
            out += JSON.stringify({ error: String(e.message || e) }) + '\n';
        }
    }
    process.stdout.write(out);
} else {
    const outFile = arg('--out');
    const metricsFile = arg('--metrics-out');
    const sleepMs = Number(arg('--sleep-ms') || 0);
    const status = Number(arg('--status') || 0);
    const server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            const answer = () => {
                const metrics = req.url === '/v1/metrics';
                if (status) {
                    const file = metrics ? metricsFile : outFile;
                    if (file) {
                        fs.appendFileSync(file, JSON.stringify({ refused: status }) + '\n');
                    }
                    res.writeHead(status, { 'Content-Type': 'application/json' });
                    res.end('{}');
                    return;
                }
                let code = 200;
                let text;
                if (metrics) {
                    let file = metricsFile;
                    try {
                        if (req.method !== 'POST') {
                            throw new Error(`${req.method} ${req.url}`);
                        }
                        if (req.headers['content-type'] !== 'application/json') {
                            throw new Error('Content-Type ' + req.headers['content-type']);
                        }
                        text = lines(decodeMetrics(Buffer.concat(chunks).toString('utf8')));
                    } catch (e) {
                        code = 400;
                        text = JSON.stringify({ error: String(e.message || e) }) + '\n';
                        file = file || outFile;
                    }
                    if (file) {
                        fs.appendFileSync(file, text);
                    }
                    res.writeHead(code, { 'Content-Type': 'application/json' });
                    res.end('{}');
                    return;
                }
                try {
                    if (req.method !== 'POST' || req.url !== '/v1/traces') {
                        throw new Error(`${req.method} ${req.url}`);
                    }
                    if (req.headers['content-type'] !== 'application/json') {
                        throw new Error('Content-Type ' + req.headers['content-type']);
                    }
                    text = lines(decode(Buffer.concat(chunks).toString('utf8')));
                } catch (e) {
                    code = 400;
                    text = JSON.stringify({ error: String(e.message || e) }) + '\n';
                }
                fs.appendFileSync(outFile, text);
                res.writeHead(code, { 'Content-Type': 'application/json' });
                res.end('{}');
            };
            sleepMs ? setTimeout(answer, sleepMs) : answer();
        });
    });
    server.listen(Number(arg('--port') || 0), '127.0.0.1', () => {
        process.stderr.write('listening ' + server.address().port + '\n');
    });
    process.on('SIGTERM', () => process.exit(0));
}
