// SPDX-License-Identifier: GPL-2.0
/*
 * The JSON lines: flat keys, "mode", "config", "engine", "folio_kb",
 * "size_bytes", "rep" first; one object per measurement on stdout (and
 * --json-out).
 */
#include "common.h"

#include <stdarg.h>

void j_raw(struct json *j, const char *key, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->len >= sizeof(j->buf) - 64)
		return;
	n = snprintf(j->buf + j->len, sizeof(j->buf) - j->len, "%s\"%s\":",
		     j->len > 1 ? "," : "", key);
	if (n > 0)
		j->len += n;
	va_start(ap, fmt);
	n = vsnprintf(j->buf + j->len, sizeof(j->buf) - j->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		j->len += n;
	if (j->len > sizeof(j->buf) - 4)
		j->len = sizeof(j->buf) - 4;
}

void j_str(struct json *j, const char *key, const char *s)
{
	char esc[512];
	size_t o = 0;

	for (; *s && o < sizeof(esc) - 8; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\') {
			esc[o++] = '\\';
			esc[o++] = c;
		} else if (c < 0x20) {
			o += snprintf(esc + o, sizeof(esc) - o, "\\u%04x", c);
		} else {
			esc[o++] = c;
		}
	}
	esc[o] = 0;
	j_raw(j, key, "\"%s\"", esc);
}

void j_int(struct json *j, const char *key, long long v)
{
	j_raw(j, key, "%lld", v);
}

void j_num(struct json *j, const char *key, double v)
{
	if (v != v)
		j_raw(j, key, "null");
	else if (fabs(v) >= 1e5)
		j_raw(j, key, "%.1f", v);
	else
		j_raw(j, key, "%.6g", v);
}

void j_bool(struct json *j, const char *key, bool v)
{
	j_raw(j, key, v ? "true" : "false");
}

void j_null(struct json *j, const char *key)
{
	j_raw(j, key, "null");
}

/* Common keys; @folio_kb 0 = not applicable. */
void j_begin(struct json *j, long folio_kb, long long size_bytes, int rep)
{
	j->len = 0;
	j->buf[j->len++] = '{';
	j->buf[j->len] = 0;
	j_str(j, "mode", mode_names[opt.mode]);
	j_str(j, "config", opt.config ? opt.config : engine);
	j_str(j, "engine", engine);
	if (folio_kb)
		j_int(j, "folio_kb", folio_kb);
	else
		j_null(j, "folio_kb");
	j_int(j, "size_bytes", size_bytes);
	j_int(j, "rep", rep);
}

void j_end(struct json *j)
{
	j->buf[j->len++] = '}';
	j->buf[j->len++] = '\n';
	j->buf[j->len] = 0;
	fputs(j->buf, stdout);
	fflush(stdout);
	if (json_file) {
		fputs(j->buf, json_file);
		fflush(json_file);
	}
}

/*
 * End the record of a measurement that found @bad corrupted bytes: its
 * verdict, the kernel, and a failure counted if any byte was wrong.
 */
void j_end_verified(struct json *j, size_t bad)
{
	j_int(j, "bad_bytes", bad);
	j_bool(j, "verified", !bad);
	j_str(j, "kernel", kernel_rel);
	j_end(j);
	if (bad)
		failures++;
}

/* A measurement that could not be made, with the reason. */
void j_skipped(long folio_kb, long long size_bytes, const char *extra_key,
	       long extra, const char *fmt, ...)
{
	struct json j;
	char reason[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	j_begin(&j, folio_kb, size_bytes, 0);
	if (extra_key)
		j_int(&j, extra_key, extra);
	j_str(&j, "kernel", kernel_rel);
	/* a skipped measurement under a hog is still one of the hog's */
	if (opt.hog && opt.mode == M_TPUT)
		j_bool(&j, "hog", true);
	j_bool(&j, "skipped", true);
	j_str(&j, "reason", reason);
	j_end(&j);
	note("%s: skipped: %s", mode_names[opt.mode], reason);
}
