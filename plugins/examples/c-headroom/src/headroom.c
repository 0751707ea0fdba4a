/*
 * headroom: an example Flotilla Prioritizer in C (clang + wasi-libc), built as a
 * WASI reactor against the stock Extism kernel imports. It proves the ABI needs
 * nothing Go-specific.
 *
 * Score of a cluster = allocatable CPU / capacity CPU as a percentage (its
 * headroom, 0..100), or -100 when it carries the label
 * flotilla.dev/maintenance=true; 0 when CPU is not reported.
 *
 * The score input layout is documented in PLUGINS.md ("Prioritizer ABI").
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

#define MAINTENANCE_LABEL "flotilla.dev/maintenance"
#define NO_STRING 0xFFFFFFFFu
#define NO_VALUE INT64_MIN

static const char DECLARATION[] =
    "{\"labels\":[\"" MAINTENANCE_LABEL "\"],"
    "\"resources\":[{\"kind\":\"Allocatable\",\"name\":\"cpu\"},{\"kind\":\"Capacity\",\"name\":\"cpu\"}]}";

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

static void output(const void *data, uint64_t n) { extism_output_set(store(data, n), n); }

static int32_t fail(const char *msg) {
    extism_error_set(store(msg, strlen(msg)));
    return 1;
}

EXPORT("flotilla_abi_version") int32_t abi_version(void) {
    output("1", 1);
    return 0;
}

EXPORT("declare_inputs") int32_t declare_inputs(void) {
    output(DECLARATION, sizeof DECLARATION - 1);
    return 0;
}

static uint8_t *read_input(uint64_t *n) {
    *n = extism_input_length();
    uint8_t *b = malloc(*n ? *n : 1);
    if (!b) return 0;
    uint64_t i = 0;
    for (; i + 8 <= *n; i += 8) {
        uint64_t v = extism_input_load_u64(i);
        memcpy(b + i, &v, 8);
    }
    for (; i < *n; i++) b[i] = (uint8_t)extism_input_load_u8(i);
    return b;
}

static uint32_t u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint64_t align8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* A label/claim cell is 1, 2 or 4 bytes; all ones means absent. */
static uint32_t string_id(const uint8_t *col, uint64_t width, uint64_t i) {
    switch (width) {
    case 1: return col[i] == 0xFF ? NO_STRING : col[i];
    case 2: { uint16_t v = u16(col + 2 * i); return v == 0xFFFF ? NO_STRING : v; }
    default: return u32(col + 4 * i);
    }
}

/* A resource cell is 4 or 8 bytes; the minimum integer means absent. */
static int64_t number(const uint8_t *col, uint64_t width, uint64_t i, int *present) {
    if (width == 4) {
        int32_t v; memcpy(&v, col + 4 * i, 4);
        *present = v != INT32_MIN;
        return v;
    }
    int64_t v; memcpy(&v, col + 8 * i, 8);
    *present = v != NO_VALUE;
    return v;
}

EXPORT("score") int32_t score(void) {
    uint64_t len;
    uint8_t *in = read_input(&len);
    if (!in) return fail("headroom: out of memory reading the input");
    if (len < 40 || memcmp(in, "FLPS", 4) != 0 || u16(in + 4) != 1) {
        free(in);
        return fail("headroom: input is not a version 1 score input");
    }
    uint64_t n = u32(in + 8), v = u32(in + 12), s = u32(in + 16), b = u32(in + 20);
    uint64_t l = u16(in + 24), c = u16(in + 26), r = u16(in + 28), a = u16(in + 30);
    if (l != 1 || c != 0 || r != 2 || a != 0) {
        free(in);
        return fail("headroom: input columns differ from the declaration");
    }
    uint64_t w = in[36];
    /* Section offsets, each 8-aligned (see PLUGINS.md). */
    uint64_t offs = 40;
    uint64_t data = align8(offs + 4 * (s + 1));
    uint64_t label_keys = align8(data + b);
    uint64_t claim_keys = align8(label_keys + 4 * l);
    uint64_t resource_keys = align8(claim_keys + 4 * c);
    uint64_t addon_keys = align8(resource_keys + 8 * r);
    if (addon_keys > len || (w != 1 && w != 2 && w != 4)) {
        free(in);
        return fail("headroom: input is too short or has a bad id width");
    }
    uint64_t alloc_w = in[resource_keys + 1], cap_w = in[resource_keys + 8 + 1];
    uint64_t label_cols = align8(addon_keys + 8 * a);
    uint64_t claim_cols = align8(label_cols + w * l * n);
    uint64_t alloc_col = align8(claim_cols + w * c * n);
    uint64_t cap_col = align8(alloc_col + alloc_w * n);
    uint64_t total = align8(cap_col + cap_w * n);
    if ((alloc_w != 4 && alloc_w != 8) || (cap_w != 4 && cap_w != 8) || total != len) {
        free(in);
        return fail("headroom: input length does not match its header");
    }
    /* Find the id of the shared string "true"; no cluster is in maintenance if absent. */
    uint32_t true_id = NO_STRING;
    for (uint32_t id = 0; id < v; id++) {
        uint32_t from = u32(in + offs + 4 * id), to = u32(in + offs + 4 * id + 4);
        if (to - from == 4 && memcmp(in + data + from, "true", 4) == 0) true_id = id;
    }
    /* Answer in the canonical form: one little-endian int64 per cluster. */
    uint64_t out = extism_alloc(8 * n);
    for (uint64_t i = 0; i < n; i++) {
        int has_alloc, has_cap;
        int64_t alloc = number(in + alloc_col, alloc_w, i, &has_alloc);
        int64_t cap = number(in + cap_col, cap_w, i, &has_cap);
        int64_t sc = 0;
        if (has_alloc && has_cap && cap > 0 && alloc >= 0) {
            sc = (int64_t)((double)alloc * 100.0 / (double)cap);
            if (sc > 100) sc = 100;
        }
        if (true_id != NO_STRING && string_id(in + label_cols, w, i) == true_id) sc = -100;
        extism_store_u64(out + 8 * i, (uint64_t)sc);
    }
    extism_output_set(out, 8 * n);
    free(in);
    return 0;
}
