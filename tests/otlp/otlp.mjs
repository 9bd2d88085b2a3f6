// OTLP profiles requests for tests/integration/otlp.sh, built with
// @bufbuild/protobuf from code that protoc-gen-es (through buf) generated from
// profilefs's own api/otlp.proto and pprof/profile.proto (npm run generate).
//
//   node otlp.mjs convert IN.pprof OUT --encoding proto|json [--gzip]
//        [--service NAME] [--start-ns T] [--spread-ns S] [--break KIND]
//        [--max-samples N] [--extra-attrs N]
//     (--service "": no service.name; --extra-attrs: N more resource attributes)
//     Converts a pprof profile (gzipped or not) into an
//     ExportProfilesServiceRequest of opentelemetry-proto v1.11.0: one OTLP
//     profile per pprof sample type sharing one dictionary, pprof labels as
//     sample attributes, sample i at T + i*S/n (one value per timestamp).
//     Writes OUT.expect.json: the totals per sample type and per UTC hour.
//     --links: a sample's span_id label (and span_name) becomes its link
//     (span id, and trace id 00..0<span id>) instead of attributes.
//     --break makes a malformed request instead: truncate, badindex (a stack
//     index past the table), v1.8 (samples in release v1.8.0's layout),
//     v1.8-agg (the same without timestamps), v1.7 (a profile with
//     v1.7.0's location_indices field), nodict (no
//     dictionary), badstring (string_table[0] not ""), badjson.
//   node otlp.mjs status FILE [json]
//     Prints the message of a google.rpc.Status reply body.
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { create, fromBinary, toBinary, toJsonString } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  ExportProfilesServiceRequestSchema, ProfilesDictionarySchema, StatusSchema,
} from "./gen/otlp_pb.js";
import { ProfileSchema } from "./gen/profile_pb.js";

function die(msg) {
  process.stderr.write(`otlp.mjs: ${msg}\n`);
  process.exit(2);
}

function opts(args) {
  const o = { encoding: "proto", gzip: false, service: "otlp-test", startNs: 0n, spreadNs: 0n,
    brk: "" };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--gzip") o.gzip = true;
    else if (a === "--encoding") o.encoding = args[++i];
    else if (a === "--service") o.service = args[++i];
    else if (a === "--start-ns") o.startNs = BigInt(args[++i]);
    else if (a === "--spread-ns") o.spreadNs = BigInt(args[++i]);
    else if (a === "--break") o.brk = args[++i];
    else if (a === "--max-samples") o.maxSamples = Number(args[++i]);
    else if (a === "--extra-attrs") o.extraAttrs = Number(args[++i]);
    else if (a === "--links") o.links = true;
    else die(`unknown argument ${a}`);
  }
  return o;
}

// The dictionary, its tables deduplicated, index 0 the zero value of each.
class Dict {
  constructor() {
    // Plain init objects: create() makes the messages once they are all here.
    this.d = {
      stringTable: [""], mappingTable: [{}], locationTable: [{}], functionTable: [{}],
      linkTable: [{}], attributeTable: [{}], stackTable: [{}],
    };
    this.strs = new Map([["", 0]]);
    this.attrs = new Map();
    this.stacks = new Map();
  }
  str(s) {
    let i = this.strs.get(s);
    if (i === undefined) {
      i = this.d.stringTable.length;
      this.d.stringTable.push(s);
      this.strs.set(s, i);
    }
    return i;
  }
  attr(key, value) {
    const k = JSON.stringify([key, value]);
    let i = this.attrs.get(k);
    if (i === undefined) {
      i = this.d.attributeTable.length;
      const v = typeof value === "bigint" ? { case: "intValue", value } :
        { case: "stringValue", value };
      this.d.attributeTable.push({ keyStrindex: this.str(key), value: { value: v } });
      this.attrs.set(k, i);
    }
    return i;
  }
  stack(locs) {
    const k = locs.join(",");
    let i = this.stacks.get(k);
    if (i === undefined) {
      i = this.d.stackTable.length;
      this.d.stackTable.push({ locationIndices: locs });
      this.stacks.set(k, i);
    }
    return i;
  }
}

function convert(inPath, outPath, o) {
  let raw = readFileSync(inPath);
  if (raw[0] === 0x1f && raw[1] === 0x8b) raw = gunzipSync(raw);
  const p = fromBinary(ProfileSchema, raw);
  if (o.maxSamples) p.sample = p.sample.slice(0, o.maxSamples);
  const s = (i) => p.stringTable[Number(i)] ?? "";
  const dict = new Dict();
  const fnIdx = new Map(), mapIdx = new Map(), locIdx = new Map();
  p.function.forEach((f) => {
    fnIdx.set(f.id, dict.d.functionTable.length);
    dict.d.functionTable.push({ nameStrindex: dict.str(s(f.name)),
      systemNameStrindex: dict.str(s(f.systemName)), filenameStrindex: dict.str(s(f.filename)),
      startLine: f.startLine });
  });
  p.mapping.forEach((m) => {
    mapIdx.set(m.id, dict.d.mappingTable.length);
    const bid = s(m.buildId);
    dict.d.mappingTable.push({ memoryStart: m.memoryStart, memoryLimit: m.memoryLimit,
      fileOffset: m.fileOffset, filenameStrindex: dict.str(s(m.filename)),
      attributeIndices: bid ? [dict.attr("process.executable.build_id.gnu", bid)] : [] });
  });
  p.location.forEach((l) => {
    locIdx.set(l.id, dict.d.locationTable.length);
    dict.d.locationTable.push({ mappingIndex: l.mappingId ? mapIdx.get(l.mappingId) : 0,
      address: l.address,
      lines: l.line.map((ln) => ({ functionIndex: fnIdx.get(ln.functionId) ?? 0, line: ln.line,
        column: ln.column })) });
  });
  const n = BigInt(p.sample.length || 1);
  const times = p.sample.map((_, i) => o.startNs + (BigInt(i) * o.spreadNs) / n);
  const linkIdx = new Map();
  const link = (smp) => {
    const sl = o.links ? smp.label.find((l) => s(l.key) === "span_id") : undefined;
    if (!sl) return 0;
    const hex = s(sl.str).padStart(16, "0");
    let i = linkIdx.get(hex);
    if (i === undefined) {
      i = dict.d.linkTable.length;
      dict.d.linkTable.push({ spanId: Buffer.from(hex, "hex"),
        traceId: Buffer.from(hex.padStart(32, "0"), "hex") });
      linkIdx.set(hex, i);
    }
    return i;
  };
  const samples = p.sample.map((smp) => ({
    stack: dict.stack(smp.locationId.map((id) => locIdx.get(id))),
    attrs: smp.label.filter((l) => !o.links || !["span_id", "span_name"].includes(s(l.key)))
      .map((l) => dict.attr(s(l.key), l.str ? s(l.str) : l.num)),
    link: link(smp),
  }));
  // Expected totals: per sample type, and per type and UTC hour.
  const expect = { total: {}, hours: {} };
  const profiles = p.sampleType.map((st, t) => {
    const type = s(st.type), unit = s(st.unit);
    let total = 0n;
    const out = [];
    p.sample.forEach((smp, i) => {
      const v = smp.value[t];
      total += v;
      const hour = new Date(Number(times[i] / 1000000n)).toISOString().slice(0, 13);
      expect.hours[hour] ??= {};
      expect.hours[hour][`${type}/${unit}`] = ((BigInt(expect.hours[hour][`${type}/${unit}`] ?? 0)) + v).toString();
      out.push({ stackIndex: samples[i].stack, attributeIndices: samples[i].attrs,
        linkIndex: samples[i].link, values: [v], timestampsUnixNano: [times[i]] });
    });
    expect.total[`${type}/${unit}`] = total.toString();
    return {
      sampleType: { typeStrindex: dict.str(type), unitStrindex: dict.str(unit) },
      samples: out, timeUnixNano: o.startNs, durationNano: o.spreadNs,
      periodType: { typeStrindex: dict.str(s(p.periodType?.type ?? 0n)),
        unitStrindex: dict.str(s(p.periodType?.unit ?? 0n)) },
      period: p.period,
    };
  });
  const req = create(ExportProfilesServiceRequestSchema, {
    resourceProfiles: [{
      resource: { attributes: [
        ...(o.service === "" ? [] :
          [{ key: "service.name", value: { value: { case: "stringValue", value: o.service } } }]),
        { key: "deployment.environment", value: { value: { case: "stringValue", value: "test" } } },
        { key: "host.cpus", value: { value: { case: "intValue", value: 2n } } },
        ...Array.from({ length: o.extraAttrs ?? 0 }, (_, i) =>
          ({ key: `extra.${i}`, value: { value: { case: "stringValue", value: "x" } } })),
      ] },
      scopeProfiles: [{ scope: { name: "profilefs-test", version: "1",
        attributes: [{ key: "profiler", value: { value: { case: "stringValue", value: "go" } } }] },
      profiles }],
    }],
    dictionary: dict.d,
  });
  let body = breakRequest(req, o);
  if (o.gzip) body = gzipSync(body);
  writeFileSync(outPath, body);
  writeFileSync(`${outPath}.expect.json`, JSON.stringify(expect, null, 1) + "\n");
}

// A sub-message: its bytes as a length-delimited field.
function sub(w, no, bytes) {
  w.tag(no, WireType.LengthDelimited).bytes(bytes);
}

// A request whose profiles are written in an older release's layout
// (v1.8-agg: v1.8.0's without timestamps, one aggregated value per sample).
function oldLayout(req, release) {
  const dict = toBinary(ProfilesDictionarySchema, req.dictionary);
  const scope = new BinaryWriter();
  for (const prof of req.resourceProfiles[0].scopeProfiles[0].profiles) {
    const pw = new BinaryWriter();
    const vt = new BinaryWriter().tag(1, WireType.Varint).int32(prof.sampleType.typeStrindex)
      .tag(2, WireType.Varint).int32(prof.sampleType.unitStrindex).finish();
    sub(pw, 1, vt);
    for (const smp of prof.samples) {
      const sw = new BinaryWriter();
      const vw = new BinaryWriter();
      smp.values.forEach((v) => vw.int64(v));
      if (release.startsWith("v1.8")) {
        // v1.8.0: stack_index 1, values 2, attribute_indices 3, link_index 4, timestamps 5.
        sw.tag(1, WireType.Varint).int32(smp.stackIndex);
        sub(sw, 2, vw.finish());
        if (release === "v1.8") {
          const tw = new BinaryWriter();
          smp.timestampsUnixNano.forEach((t) => tw.fixed64(t));
          sub(sw, 5, tw.finish());
        }
      } else {
        // v1.7.0: locations_start_index 1, locations_length 2, value 3.
        sw.tag(1, WireType.Varint).int32(0).tag(2, WireType.Varint).int32(1);
        sub(sw, 3, vw.finish());
      }
      sub(pw, 2, sw.finish());
    }
    if (release === "v1.7") {
      // v1.7.0's Profile.location_indices (3, packed int32): v1.11.0's field 3 is a fixed64.
      const lw = new BinaryWriter();
      [1, 2, 3].forEach((i) => lw.int32(i));
      sub(pw, 3, lw.finish());
    } else {
      pw.tag(3, WireType.Bit64).fixed64(prof.timeUnixNano);
    }
    sub(scope, 2, pw.finish());
  }
  const rp = new BinaryWriter();
  sub(rp, 2, scope.finish());
  const w = new BinaryWriter();
  sub(w, 1, rp.finish());
  sub(w, 2, dict);
  return w.finish();
}

function breakRequest(req, o) {
  const enc = (r) => o.encoding === "json" ?
    Buffer.from(toJsonString(ExportProfilesServiceRequestSchema, r)) :
    Buffer.from(toBinary(ExportProfilesServiceRequestSchema, r));
  switch (o.brk) {
    case "":
      return enc(req);
    case "truncate": {
      const b = enc(req);
      return b.subarray(0, Math.floor(b.length / 2));
    }
    case "badindex":
      req.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].stackIndex =
        req.dictionary.stackTable.length + 5;
      return enc(req);
    case "nodict":
      req.dictionary = undefined;
      return enc(req);
    case "badstring":
      req.dictionary.stringTable[0] = "x";
      return enc(req);
    case "badjson":
      return Buffer.from(toJsonString(ExportProfilesServiceRequestSchema, req).slice(0, 200));
    case "v1.8":
    case "v1.8-agg":
    case "v1.7":
      return Buffer.from(oldLayout(req, o.brk));
    default:
      die(`unknown --break ${o.brk}`);
  }
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === "convert") {
  if (rest.length < 2) die("convert IN OUT [options]");
  convert(rest[0], rest[1], opts(rest.slice(2)));
} else if (cmd === "status") {
  const b = readFileSync(rest[0]);
  const st = rest[1] === "json" ? JSON.parse(b.toString()) : fromBinary(StatusSchema, b);
  process.stdout.write(`${st.code} ${st.message}\n`);
} else {
  die("usage: otlp.mjs convert IN OUT [options] | status FILE [json]");
}
