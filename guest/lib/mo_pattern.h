/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one data pattern of the guest programs (mo_migrate, mo_bench,
 * mo_tier): what every byte of a test buffer must hold, and the check of
 * it. Header-only but for mo_bytes_checked, which lives in mo_state.c:
 * one count per program, however many .c files check bytes.
 *
 * The 8-byte word at word index @idx (byte offset / 8 in the buffer) of a
 * buffer filled with @seed is
 *
 *	x = (idx + seed * G) * M,  word = x ^ (x >> 29)   (mod 2^64)
 *
 * with G the 64-bit golden ratio and M odd: both steps are bijections, so
 * two words coincide only when idx' - idx == (seed - seed') * G (mod 2^64):
 *
 *  - never within one buffer (same seed): no two words of a buffer are
 *    equal, so a page copied to the wrong place or a shifted copy shows;
 *  - never at the same offset for two seeds (G is odd): a stale copy of a
 *    page (a generation ago, another buffer) never passes for the current
 *    one;
 *  - for seeds less than 2^24 apart, only at offsets at least 2^39 words
 *    (4 TiB) apart: the smallest |d * G mod 2^64| for 0 < d <= 2^24 is
 *    about 2^39.01 (computed; multiples of the golden ratio stay far from
 *    0), so generations and neighbouring buffers of any realistic size
 *    never share a word.
 *
 * Callers choose the seed: a generation number per page (mo_migrate's
 * writers, mo_tier), or one per buffer (mo_bench: mode, size and
 * repetition).
 */
#ifndef MO_PATTERN_H
#define MO_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define MO_PATTERN_G 0x9e3779b97f4a7c15ULL
#define MO_PATTERN_M 0xff51afd7ed558ccdULL

/* The word at word index @idx of a buffer filled with @seed. */
static inline uint64_t mo_pattern_word(uint64_t idx, uint64_t seed)
{
	uint64_t x = (idx + seed * MO_PATTERN_G) * MO_PATTERN_M;

	return x ^ (x >> 29);
}

/* The byte at byte offset @off (little endian words). */
static inline uint8_t mo_pattern_byte(uint64_t off, uint64_t seed)
{
	return (uint8_t)(mo_pattern_word(off / 8, seed) >> (8 * (off & 7)));
}

/*
 * Fill @len bytes at @p, which sits at byte offset @base of the buffer;
 * @base and @len are multiples of 8.
 */
static inline void mo_pattern_fill(void *p, size_t base, size_t len, uint64_t seed)
{
	uint64_t *w = p, idx = base / 8;
	size_t i, n = len / 8;

	for (i = 0; i < n; i++)
		w[i] = mo_pattern_word(idx + i, seed);
}

/* The first wrong byte a verification found. */
struct mo_bad {
	size_t off;		/* byte offset in the buffer (@base + ...) */
	uint8_t got, want;
};

/* Bytes mo_pattern_verify() has read, for the programs' bytes_checked= line. */
extern unsigned long long mo_bytes_checked;

/*
 * The number of bytes of @len at @p (at byte offset @base of the buffer)
 * that differ from the pattern of @seed, compared byte by byte in every
 * word that differs; the first one goes to @first (if not NULL and any).
 * The buffer is read once, word by word, so a concurrent change is seen
 * at most once.
 */
static inline size_t mo_pattern_verify(const void *p, size_t base, size_t len,
				       uint64_t seed, struct mo_bad *first)
{
	const uint64_t *w = p;
	uint64_t idx = base / 8;
	size_t i, n = len / 8, bad = 0;
	int b;

	__atomic_add_fetch(&mo_bytes_checked, 8ULL * n, __ATOMIC_RELAXED);

	for (i = 0; i < n; i++) {
		uint64_t got = w[i], want = mo_pattern_word(idx + i, seed);

		if (got == want)
			continue;
		for (b = 0; b < 8; b++) {
			uint8_t g = got >> (8 * b), x = want >> (8 * b);

			if (g == x)
				continue;
			if (!bad++ && first)
				*first = (struct mo_bad){ .off = base + 8 * i + b,
							  .got = g, .want = x };
		}
	}
	return bad;
}

#endif /* MO_PATTERN_H */
