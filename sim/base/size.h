/* size — a byte count (or a plain count) as the command-line tools take it:
 * one parser for `kvsim calibrate` and kvreplay, so both read the same text
 * the same way.
 *
 * The text is a non-negative number as strtod reads it (decimal, e-notation,
 * a point: "4096", "1e6", "1.5"), then at most one binary suffix, K or k
 * (x 1024), M (x 2^20) or G (x 2^30), then nothing: "64K", "1.5M", "2G".
 * The value is rounded to the nearest whole number (halves away from zero),
 * so "1.5" is 2 and "0.5K" is 512. Config values are not read here: they
 * are whole numbers without suffixes (cfg_parse_whole, sim/base/cfg.h).
 *
 * size_parse returns 0 with *out set; SIZE_NOT_SIZE (*out untouched) when
 * text is no size (empty, no number, NaN, a suffix other than those, or
 * anything after it); SIZE_OUT_OF_RANGE when it is one but negative or over
 * max (at most 2^64 - 1), so callers can tell the two apart as with
 * cfg_parse_whole.  No allocation. */
#ifndef KVSIM_SIZE_H
#define KVSIM_SIZE_H

#include <stdint.h>

enum { SIZE_NOT_SIZE = 1, SIZE_OUT_OF_RANGE = 2 };

int size_parse(const char *text, uint64_t max, uint64_t *out);

#endif
