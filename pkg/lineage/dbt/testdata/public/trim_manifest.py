#!/usr/bin/env python3
"""Trim a public dbt manifest.json (or a prefix of one, as fetched) to a small real fixture.

Keeps `metadata` verbatim and the first complete entries of `nodes`, `sources` and `exposures`
found in the input, byte-for-byte as dbt wrote them (re-serialised with sorted keys); drops
macros, docs and everything else too large for a test fixture. Stops at the first incomplete
entry, so the input may be a truncated prefix of the original file.

usage: trim_manifest.py INPUT OUTPUT [MAX_NODES]
"""
import json
import sys


def entries(text, key):
    dec = json.JSONDecoder()
    start = text.find('"%s": {' % key)
    if start < 0:
        start = text.find('"%s":{' % key)
    if start < 0:
        return {}
    i = text.index('{', start) + 1
    out = {}
    while True:
        while i < len(text) and text[i] in ' \n\r\t,':
            i += 1
        if i >= len(text) or text[i] == '}':
            return out
        try:
            k, i = dec.raw_decode(text, i)
            while text[i] in ' \n\r\t:':
                i += 1
            v, i = dec.raw_decode(text, i)
        except (json.JSONDecodeError, IndexError):
            return out  # truncated input: keep what is complete
        out[k] = v


def main():
    src, dst = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 30
    text = open(src, encoding='utf-8').read()
    meta, _ = json.JSONDecoder().raw_decode(text, text.index('{', text.index('"metadata"')))
    nodes = dict(list(entries(text, 'nodes').items())[:limit])
    out = {'metadata': meta, 'nodes': nodes, 'sources': entries(text, 'sources'),
           'exposures': entries(text, 'exposures'), 'macros': {}, 'docs': {}, 'metrics': {},
           'selectors': {}, 'disabled': {}, 'parent_map': {}, 'child_map': {}}
    json.dump(out, open(dst, 'w', encoding='utf-8'), indent=1, sort_keys=True)
    print('%s: %d nodes, %d sources, %d exposures' % (dst, len(out['nodes']), len(out['sources']), len(out['exposures'])))


if __name__ == '__main__':
    main()
