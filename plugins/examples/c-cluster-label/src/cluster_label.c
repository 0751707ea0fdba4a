/*
 * cluster-label: an example Flotilla ManifestTransformer in C (clang + wasi-libc), built
 * as a WASI reactor against the stock Extism kernel imports.
 *
 * It labels every manifest it is given with example.flotilla.dev/cluster=<cluster name>,
 * answering an RFC 6902 patch so it never re-serialises the manifest: it only scans the
 * request for cluster.name and for whether manifest.metadata.labels exists.
 *
 * The transform_manifest request and result are documented in PLUGINS.md
 * ("ManifestTransformer ABI").
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define IMPORT(name) __attribute__((import_module("extism:host/env"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

IMPORT("input_length") extern uint64_t extism_input_length(void);
IMPORT("input_load_u64") extern uint64_t extism_input_load_u64(uint64_t offset);
IMPORT("input_load_u8") extern uint32_t extism_input_load_u8(uint64_t offset);
IMPORT("alloc") extern uint64_t extism_alloc(uint64_t length);
IMPORT("store_u64") extern void extism_store_u64(uint64_t offset, uint64_t value);
IMPORT("store_u8") extern void extism_store_u8(uint64_t offset, uint32_t value);
IMPORT("output_set") extern void extism_output_set(uint64_t offset, uint64_t length);
IMPORT("error_set") extern void extism_error_set(uint64_t offset);

#define LABEL_POINTER "example.flotilla.dev~1cluster"
#define LABEL_KEY "example.flotilla.dev/cluster"

static uint64_t store(const void *data, uint64_t n) {
    const uint8_t *p = data;
    uint64_t off = extism_alloc(n), i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8); /* wasm is little-endian, like the ABI */
        extism_store_u64(off + i, v);
    }
    for (; i < n; i++) extism_store_u8(off + i, p[i]);
    return off;
}

static int32_t fail(const char *msg) {
    extism_error_set(store(msg, strlen(msg)));
    return 1;
}

EXPORT("flotilla_abi_version") int32_t abi_version(void) {
    extism_output_set(store("1", 1), 1);
    return 0;
}

static char *read_input(uint64_t *n) {
    *n = extism_input_length();
    char *b = malloc(*n + 1);
    if (!b) return 0;
    uint64_t i = 0;
    for (; i + 8 <= *n; i += 8) {
        uint64_t v = extism_input_load_u64(i);
        memcpy(b + i, &v, 8);
    }
    for (; i < *n; i++) b[i] = (char)extism_input_load_u8(i);
    b[*n] = 0;
    return b;
}

/* A minimal scanner over valid JSON (the host sends valid JSON): each returns the
 * position after what it skipped, or 0 at the end of the text. */
static const char *ws(const char *p) {
    while (p && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static const char *skip_string(const char *p) { /* p at the opening quote */
    for (p++; *p; p++) {
        if (*p == '\\' && p[1]) p++;
        else if (*p == '"') return p + 1;
    }
    return 0;
}

static const char *skip_value(const char *p) {
    p = ws(p);
    if (!p || !*p) return 0;
    if (*p == '"') return skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (*p) {
            if (*p == '"') { p = skip_string(p); if (!p) return 0; continue; }
            if (*p == '{' || *p == '[') depth++;
            if (*p == '}' || *p == ']') { if (--depth == 0) return p + 1; }
            p++;
        }
        return 0;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']') p++; /* number or literal */
    return p;
}

/* find returns the value of member key of the object at p, or 0. */
static const char *find(const char *p, const char *key) {
    size_t n = strlen(key);
    p = ws(p);
    if (!p || *p != '{') return 0;
    p = ws(p + 1);
    while (p && *p == '"') {
        const char *end = skip_string(p);
        if (!end) return 0;
        int match = (size_t)(end - p - 2) == n && memcmp(p + 1, key, n) == 0;
        p = ws(end);
        if (!p || *p != ':') return 0;
        p = ws(p + 1);
        if (match) return p;
        p = ws(skip_value(p));
        if (!p || *p != ',') return 0;
        p = ws(p + 1);
    }
    return 0;
}

EXPORT("transform_manifest") int32_t transform_manifest(void) {
    uint64_t n;
    char *in = read_input(&n);
    if (!in) return fail("out of memory");
    const char *name = find(find(in, "cluster"), "name");
    if (!name || *name != '"') { free(in); return fail("the request has no cluster.name"); }
    const char *name_end = skip_string(name);
    size_t len = name_end ? (size_t)(name_end - name - 2) : 0;
    if (len == 0 || len > 63 || memchr(name + 1, '\\', len)) {
        free(in);
        return fail("the cluster name is not a valid label value");
    }
    const char *meta = find(find(in, "manifest"), "metadata");
    if (!meta || *meta != '{') { free(in); return fail("the manifest has no metadata"); }
    const char *labels = find(meta, "labels");

    static const char add_one[] = "{\"patch\":[{\"op\":\"add\",\"path\":\"/metadata/labels/" LABEL_POINTER "\",\"value\":\"";
    static const char add_map[] = "{\"patch\":[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"" LABEL_KEY "\":\"";
    const char *head = labels && *labels == '{' ? add_one : add_map;
    const char *tail = labels && *labels == '{' ? "\"}]}" : "\"}}]}";
    size_t hn = strlen(head), tn = strlen(tail);
    char *out = malloc(hn + len + tn);
    if (!out) { free(in); return fail("out of memory"); }
    memcpy(out, head, hn);
    memcpy(out + hn, name + 1, len);
    memcpy(out + hn + len, tail, tn);
    extism_output_set(store(out, hn + len + tn), hn + len + tn);
    free(out);
    free(in);
    return 0;
}
