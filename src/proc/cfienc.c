// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * cfienc.c - DWARF CFI pointer encodings (DW_EH_PE_*) of .eh_frame FDEs; see
 * cfienc.h. The bytes are a mapped file's: every read is bounded by end.
 */
#include "proc/cfienc.h"
#include "base/bytes.h"

#include <dwarf.h>
#include <errno.h>

/* Size of an encoded value at p (for LEB128 it depends on the bytes); -1 if unknown. */
static ssize_t enc_size(uint8_t enc, const uint8_t *p, const uint8_t *end)
{
	if (enc == DW_EH_PE_omit)
		return 0;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128:
		for (ssize_t n = 0; p + n < end && n < 10; n++)
			if (!(p[n] & 0x80))
				return n + 1;
		return -1;
	default:
		return -1;
	}
}

/*
 * Reads a value with format (enc & 0x0f) at *pp; applies pc-relative
 * addressing if asked (field_addr = vaddr of the field). Only the encodings
 * an FDE's initial location uses in practice are accepted.
 */
int cfienc__read(uint8_t enc, const uint8_t **pp, const uint8_t *end, bool apply,
		 uint64_t field_addr, uint64_t *out)
{
	const uint8_t *p = *pp;
	ssize_t n = enc_size(enc, p, end);
	uint64_t v;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect) || n <= 0 || end - p < n)
		return -EINVAL;
	switch (enc & 0x0f) {
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128: {
		unsigned shift = 0;

		v = 0;
		for (ssize_t i = 0; i < n; i++, shift += 7)
			if (shift < 64)
				v |= (uint64_t)(p[i] & 0x7f) << shift;
		if ((enc & 0x0f) == DW_EH_PE_sleb128 && shift < 64 && (p[n - 1] & 0x40))
			v |= ~0ull << shift;
		break;
	}
	case DW_EH_PE_sdata2:
		v = (uint64_t)(int64_t)(int16_t)rd_le(p, 2);
		break;
	case DW_EH_PE_sdata4:
		v = (uint64_t)(int64_t)(int32_t)rd_le(p, 4);
		break;
	default:
		v = rd_le(p, (size_t)n);
		break;
	}
	if (apply) {
		switch (enc & 0x70) {
		case DW_EH_PE_absptr:
			break;
		case DW_EH_PE_pcrel:
			v += field_addr;
			break;
		default:
			return -EINVAL; /* textrel/datarel/funcrel: not used for FDEs on x86-64 */
		}
	}
	*pp = p + n;
	*out = v;
	return 0;
}

/* The FDE pointer encoding of a CIE, from its augmentation ("zR", "zPLR", ...). */
bool cfienc__cie_fde_encoding(const Dwarf_CIE *cie, uint8_t *enc)
{
	const char *a = cie->augmentation;
	const uint8_t *d = cie->augmentation_data;
	const uint8_t *end = d ? d + cie->augmentation_data_size : NULL;

	*enc = DW_EH_PE_absptr;
	if (!a || !*a)
		return true;
	if (a[0] != 'z' || !d)
		return false; /* "eh" and other pre-'z' forms: layout unknown */
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			if (d >= end)
				return false;
			*enc = *d++;
			break;
		case 'L':
			if (d >= end)
				return false;
			d++;
			break;
		case 'P': {
			uint8_t pe;
			ssize_t n;

			if (d >= end)
				return false;
			pe = *d++;
			n = enc_size(pe, d, end);
			if (n < 0 || end - d < n)
				return false;
			d += n;
			break;
		}
		case 'S': /* signal frame */
		case 'B': /* aarch64 BTI */
		case 'G': /* MTE */
			break;
		default:
			return false;
		}
	}
	return true;
}
