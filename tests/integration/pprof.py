# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""A small, independent pprof (profile.proto) decoder for the tests.

Written from the field numbers in profile.proto, separately from bpfprof's C
encoder, so a test that decodes bpfprof's output checks the encoder rather
than sharing its mistakes.
"""
import gzip


def _varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _fields(buf):
    """Yields (field number, wire type, value) of one message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wt == 1:
            v = int.from_bytes(buf[i:i + 8], "little")
            i += 8
        elif wt == 5:
            v = int.from_bytes(buf[i:i + 4], "little")
            i += 4
        else:
            raise ValueError(f"unsupported wire type {wt}")
        yield field, wt, v


def _packed(v, wt):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def decode(data):
    """Decodes a (gzipped or not) pprof Profile into plain dicts and lists."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    p = {"sample_type": [], "sample": [], "mapping": {}, "location": {}, "function": {},
         "string_table": [], "time_nanos": 0, "duration_nanos": 0, "period_type": None,
         "period": 0}
    raw_samples = []
    for f, wt, v in _fields(data):
        if f == 1:
            p["sample_type"].append({k: x for k, _, x in _fields(v)})
        elif f == 2:
            raw_samples.append(v)
        elif f == 3:
            m = {k: x for k, _, x in _fields(v)}
            p["mapping"][m.get(1)] = m
        elif f == 4:
            loc = {"id": 0, "mapping_id": 0, "address": 0, "lines": []}
            for k, w, x in _fields(v):
                if k == 1:
                    loc["id"] = x
                elif k == 2:
                    loc["mapping_id"] = x
                elif k == 3:
                    loc["address"] = x
                elif k == 4:
                    loc["lines"].append({kk: xx for kk, _, xx in _fields(x)})
            p["location"][loc["id"]] = loc
        elif f == 5:
            fn = {k: x for k, _, x in _fields(v)}
            p["function"][fn.get(1)] = fn
        elif f == 6:
            p["string_table"].append(v.decode())
        elif f == 9:
            p["time_nanos"] = v
        elif f == 10:
            p["duration_nanos"] = v
        elif f == 11:
            p["period_type"] = {k: x for k, _, x in _fields(v)}
        elif f == 12:
            p["period"] = v
        elif f == 13:
            p.setdefault("comment", []).extend(_packed(v, wt))
    st = p["string_table"]
    for raw in raw_samples:
        s = {"location_id": [], "value": [], "label": {}}
        for k, w, x in _fields(raw):
            if k == 1:
                s["location_id"] += _packed(x, w)
            elif k == 2:
                s["value"] += _packed(x, w)
            elif k == 3:
                lab = {kk: xx for kk, _, xx in _fields(x)}
                key = st[lab.get(1, 0)]
                s["label"][key] = st[lab[2]] if lab.get(2) else lab.get(3)
        p["sample"].append(s)
    return p


def strings(p, idx):
    return p["string_table"][idx] if idx else ""


def to_folded(p):
    """{"comm;root;...;leaf": samples}, like bpfprof's folded output (no _[k] suffixes
    unless the function names carry them)."""
    out = {}
    for s in p["sample"]:
        names = []
        for lid in reversed(s["location_id"]):  # leaf first in pprof
            loc = p["location"][lid]
            for line in reversed(loc["lines"]):
                fn = p["function"][line.get(1)]
                names.append(strings(p, fn.get(2, 0)))
        comm = s["label"].get("comm", "")
        key = ";".join([comm] + names)
        out[key] = out.get(key, 0) + s["value"][0]
    return out
