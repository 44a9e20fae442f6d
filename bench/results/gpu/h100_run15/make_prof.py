# writes lib/model/qwen2_prof.ts: qwen2.ts with forwardCached's parts timed (a device-call helper;
# never commit it)
s = open('lib/model/qwen2.ts').read()
s = s.replace('''  forwardCached(
    cache: Qwen2KvCache,''', '''  static prof: Record<string, number> = {};
  forwardCached(
    cache: Qwen2KvCache,''', 1)
marks = [
 ('    this.#alive();\n    const cfg = this.config;\n    if (!(cache instanceof Qwen2KvCache)', 'start'),
 ('    const k = this.kernels;\n    this.#syncLow(); // before the layers', 'validate'),
 ('    const d = this.#decodeViews(n);', 'syncLow'),
 ('    upload(d.ids, ids);', 'ids'),
 ('    embeddingForward(k, d.x, d.tokens, this.#wc.embed);', 'upload'),
 ("    // The layers' pointers and sizes depend only on these: replayed as a graph on CUDA.", 'embed'),
 ('    if (logitRows.length === 0) return null;\n    return this.#headRows(d.x, logitRows, n);', 'graph'),
]
for anchor, name in marks:
    assert anchor in s, anchor
    if name == 'start':
        s = s.replace(anchor, '    let __t = performance.now();\n    const __m = (k: string) => { const t = performance.now(); Qwen2Model.prof[k] = (Qwen2Model.prof[k] ?? 0) + t - __t; __t = t; };\n' + anchor, 1)
    elif name == 'graph':
        s = s.replace(anchor, '    __m("graph");\n    if (logitRows.length === 0) return null;\n    const __r = this.#headRows(d.x, logitRows, n);\n    __m("head");\n    return __r;', 1)
    else:
        s = s.replace(anchor, f'    __m("{name}");\n' + anchor, 1)
open('lib/model/qwen2_prof.ts', 'w').write(s)
