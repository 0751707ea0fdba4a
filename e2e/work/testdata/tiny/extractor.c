/*
 * tiny: a FeedbackExtractor test plugin for the work e2e suite, in C (clang + wasi-libc) so
 * the module is a few KB and fits in a ManifestWork: OCM's hub limits a work's manifests to
 * 500 KiB, and a Go module (≈ 540 KiB zstd, ≈ 720 KiB as base64 in a ConfigMap manifest)
 * does not. It serves ConfigMaps and reports who extracted (ExtractedBy: "tiny") and the
 * size of the request it got (InputBytes).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define IMPORT(name) __attribute__((import_module("extism:host/env"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

IMPORT("input_length") extern uint64_t extism_input_length(void);
IMPORT("alloc") extern uint64_t extism_alloc(uint64_t length);
IMPORT("store_u8") extern void extism_store_u8(uint64_t offset, uint32_t value);
IMPORT("output_set") extern void extism_output_set(uint64_t offset, uint64_t length);

static void output(const char *s) {
    uint64_t n = strlen(s), off = extism_alloc(n);
    for (uint64_t i = 0; i < n; i++) extism_store_u8(off + i, (uint8_t)s[i]);
    extism_output_set(off, n);
}

EXPORT("declare_resources") int32_t declare_resources(void) {
    output("{\"resources\":[{\"group\":\"\",\"kind\":\"ConfigMap\"}]}");
    return 0;
}

EXPORT("extract_feedback") int32_t extract_feedback(void) {
    static char out[256];
    snprintf(out, sizeof out,
             "{\"values\":[{\"name\":\"ExtractedBy\",\"fieldValue\":{\"type\":\"String\",\"string\":\"tiny\"}},"
             "{\"name\":\"InputBytes\",\"fieldValue\":{\"type\":\"Integer\",\"integer\":%llu}}]}",
             (unsigned long long)extism_input_length());
    output(out);
    return 0;
}
