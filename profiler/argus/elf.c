/*
 * The device functions and source lines of a cubin, for argus-shim's
 * function-level regions and source-line hot spots (include/argus/shim.h,
 * docs/argus.md "PC sampling").
 *
 * Why our own reader and not libelf/libdwarf: a cubin is a small ELF64
 * little-endian file, and we need three things from it (the section
 * headers, the STT_FUNC symbols and the DWARF 2-4 line program of
 * .debug_line with its one relocation per sequence); <elf.h> describes the
 * first two, and the line program is a page of the DWARF standard (6.2).
 * libdwarf does not apply CUDA's relocations (type 2 against the kernel's
 * symbol), which is exactly what places a line sequence in a section.
 *
 * What nvcc 13.0 writes (checked on tests/argus/fixtures/pcs_kernel.cubin,
 * sm_90, -lineinfo; readelf, cuobjdump 13.2 and nvdisasm 13.2 agree):
 *   - every kernel has its own section .text.KERNEL, and its GLOBAL FUNC
 *     symbol (st_other 0x10, STO_CUDA_ENTRY) covers the whole section;
 *   - a __noinline__ device function called by it is a LOCAL FUNC named
 *     "$KERNEL$MANGLED" inside the same section (a copy per calling kernel
 *     in whole-program mode), so the innermost function containing a PC is
 *     the one that ran it;
 *   - .debug_line holds one sequence per kernel section; its
 *     DW_LNE_set_address operand is 0 in the file and relocated (RELA, type
 *     2) against the kernel's symbol: the address is section-relative.
 * CUPTI's PC samples name a function and a pcOffset from that function's
 * start (for a kernel: the section's start), which is what
 * argus_cubin_locate takes.
 *
 * Every offset and size is checked against the image before it is used,
 * so a truncated or damaged cubin is ARGUS_EFORMAT with the field named,
 * never a read outside the buffer.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "argus/shim.h"
#include "argus_internal.h"

/* nvcc marks a kernel's symbol with this st_other bit (nvdisasm prints it
 * as STO_CUDA_ENTRY); tested on nvcc 13.0 cubins for sm_90. */
#define ARGUS__STO_CUDA_ENTRY 0x10
#define ARGUS__R_CUDA_64 2 /* the relocation type of .rela.debug_line */
#define CUBIN_MAX_FILES 4096

/* DWARF 2 line-program opcodes (DWARF 2 standard, 6.2.5; <elf.h> has none). */
enum {
    LNS_copy = 1,
    LNS_advance_pc = 2,
    LNS_advance_line = 3,
    LNS_set_file = 4,
    LNS_const_add_pc = 8,
    LNS_fixed_advance_pc = 9,
    LNE_end_sequence = 1,
    LNE_set_address = 2,
};

typedef struct elf_view {
    const uint8_t *b;
    size_t len;
    const char *where;
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh;
    const char *shstr;
    size_t shstrlen;
} elf_view;

static int bad(const elf_view *v, char *msg, size_t msglen, const char *field, const char *what)
{
    return argus__fail(ARGUS_EFORMAT, msg, msglen, "%s: %s: %s", v->where ? v->where : "<cubin>",
                       field, what);
}

/* A NUL-terminated string at off inside [base, base+len), or NULL. */
static const char *str_at(const char *base, size_t len, uint64_t off)
{
    if (base == NULL || off >= len)
        return NULL;
    return memchr(base + off, '\0', len - off) ? base + off : NULL;
}

static const char *sec_name(const elf_view *v, size_t i)
{
    return str_at(v->shstr, v->shstrlen, v->sh[i].sh_name);
}

static int sec_bytes(const elf_view *v, size_t i, const uint8_t **p, size_t *n)
{
    const Elf64_Shdr *s = &v->sh[i];
    if (s->sh_type == SHT_NOBITS) {
        *p = NULL;
        *n = 0;
        return 0;
    }
    if (s->sh_offset > v->len || s->sh_size > v->len - s->sh_offset)
        return -1;
    *p = v->b + s->sh_offset;
    *n = (size_t)s->sh_size;
    return 0;
}

static int open_view(elf_view *v, char *msg, size_t msglen)
{
    if (v->len < sizeof(Elf64_Ehdr))
        return bad(v, msg, msglen, "ELF header",
                   "the file is shorter than an ELF64 header (truncated, or not a cubin)");
    v->eh = (const Elf64_Ehdr *)v->b;
    const unsigned char *id = v->eh->e_ident;
    if (memcmp(id, ELFMAG, SELFMAG) != 0)
        return bad(v, msg, msglen, "e_ident", "no ELF magic: not a cubin (a fatbin or PTX?)");
    if (id[EI_CLASS] != ELFCLASS64 || id[EI_DATA] != ELFDATA2LSB)
        return bad(v, msg, msglen, "e_ident",
                   "not a 64-bit little-endian ELF (cubins for sm_50 and later are)");
    if (v->eh->e_machine != EM_CUDA)
        return bad(v, msg, msglen, "e_machine", "not EM_CUDA (190): an ELF, but not a cubin");
    if (v->eh->e_shentsize != sizeof(Elf64_Shdr) || v->eh->e_shnum == 0)
        return bad(v, msg, msglen, "e_shentsize", "no section headers of the ELF64 size");
    uint64_t end = (uint64_t)v->eh->e_shnum * sizeof(Elf64_Shdr);
    if (v->eh->e_shoff > v->len || end > v->len - v->eh->e_shoff)
        return bad(v, msg, msglen, "e_shoff",
                   "the section headers lie beyond the end of the file (truncated cubin)");
    /* The program headers (the loader's view; nvcc puts them last) must be
     * there too: a cut there is a truncated file even if no section is. */
    uint64_t pend = (uint64_t)v->eh->e_phnum * v->eh->e_phentsize;
    if (v->eh->e_phoff > v->len || pend > v->len - v->eh->e_phoff)
        return bad(v, msg, msglen, "e_phoff",
                   "the program headers lie beyond the end of the file (truncated cubin)");
    if (v->eh->e_shoff % 8 != 0)
        return bad(v, msg, msglen, "e_shoff", "section headers not 8-byte aligned");
    v->sh = (const Elf64_Shdr *)(v->b + v->eh->e_shoff);
    size_t ns = v->eh->e_shnum;
    for (size_t i = 0; i < ns; i++) {
        const uint8_t *p;
        size_t n;
        if (sec_bytes(v, i, &p, &n) != 0)
            return bad(v, msg, msglen, "sh_offset",
                       "a section's bytes lie beyond the end of the file (truncated cubin)");
    }
    if (v->eh->e_shstrndx >= ns || v->sh[v->eh->e_shstrndx].sh_type != SHT_STRTAB)
        return bad(v, msg, msglen, "e_shstrndx", "the section-name table is missing");
    const uint8_t *p = NULL;
    sec_bytes(v, v->eh->e_shstrndx, &p, &v->shstrlen);
    v->shstr = (const char *)p;
    return 0;
}

static int cmp_line(const void *a, const void *b)
{
    const argus_cubin_line *x = a, *y = b;
    if (x->section != y->section)
        return x->section < y->section ? -1 : 1;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* ULEB128/SLEB128 readers over [*p, end); -1 when the number runs past. */
static int uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; *p < end; shift += 7) {
        uint8_t c = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int sleb(const uint8_t **p, const uint8_t *end, int64_t *out)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t c = 0;
    do {
        if (*p >= end)
            return -1;
        c = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(c & 0x7f) << shift;
        shift += 7;
    } while (c & 0x80);
    if (shift < 64 && (c & 0x40))
        v |= ~(uint64_t)0 << shift;
    *out = (int64_t)v;
    return 0;
}

typedef struct line_ctx {
    argus_cubin *c;
    size_t capl, capf;
    const Elf64_Rela *rela;
    size_t nrela;
    const Elf64_Sym *sym;
    size_t nsym;
    uint32_t file_base; /* this unit's file 1 in c->files */
    uint32_t nfiles_unit;
} line_ctx;

static int add_row(line_ctx *x, uint32_t section, uint64_t addr, uint64_t file, uint64_t line)
{
    argus_cubin *c = x->c;
    if (section == 0 || file == 0 || file > x->nfiles_unit || line == 0 || line > UINT32_MAX)
        return 0; /* not placed in a section, or no source: not a row we can use */
    if (argus__grow((void **)&c->lines, &x->capl, c->nlines + 1, sizeof(argus_cubin_line)) != 0)
        return ARGUS_ENOMEM;
    c->lines[c->nlines] = (argus_cubin_line){section, addr, x->file_base + (uint32_t)file - 1,
                                             (uint32_t)line, 0, (uint32_t)c->nlines};
    c->nlines++;
    return 0;
}

static int add_file(line_ctx *x, const char *dir, const char *name)
{
    argus_cubin *c = x->c;
    if (c->nfiles >= CUBIN_MAX_FILES)
        return ARGUS_ELIMIT;
    if (argus__grow((void **)&c->files, &x->capf, c->nfiles + 1, sizeof(char *)) != 0)
        return ARGUS_ENOMEM;
    size_t n = (dir && dir[0] && name[0] != '/' ? strlen(dir) + 1 : 0) + strlen(name) + 1;
    char *s = malloc(n);
    if (s == NULL)
        return ARGUS_ENOMEM;
    if (dir && dir[0] && name[0] != '/')
        snprintf(s, n, "%s/%s", dir, name);
    else
        snprintf(s, n, "%s", name);
    c->files[c->nfiles++] = s;
    return 0;
}

/* One line-number program unit starting at u (DWARF 2-4, 32-bit format). */
static int line_unit(line_ctx *x, const elf_view *v, const uint8_t *sec, size_t seclen, size_t u,
                     size_t *next, char *msg, size_t msglen)
{
    const uint8_t *p = sec + u, *end = sec + seclen;
    uint32_t unit_len, hdr_len;
    uint16_t ver;
    if ((size_t)(end - p) < 10)
        return bad(v, msg, msglen, ".debug_line", "a unit header is cut off");
    memcpy(&unit_len, p, 4);
    if (unit_len >= 0xfffffff0u)
        return bad(v, msg, msglen, ".debug_line", "64-bit DWARF is not read (nvcc writes 32-bit)");
    if (unit_len > (size_t)(end - p) - 4)
        return bad(v, msg, msglen, ".debug_line", "unit_length runs past the section (truncated)");
    const uint8_t *uend = p + 4 + unit_len;
    *next = (size_t)(uend - sec);
    memcpy(&ver, p + 4, 2);
    if (ver < 2 || ver > 4)
        return bad(v, msg, msglen, ".debug_line",
                   "DWARF line table version not 2-4 (nvcc 13.0 writes 2)");
    memcpy(&hdr_len, p + 6, 4);
    p += 10;
    if (hdr_len > (size_t)(uend - p))
        return bad(v, msg, msglen, ".debug_line", "header_length runs past the unit");
    const uint8_t *prog = p + hdr_len;
    size_t fixed = ver >= 4 ? 6 : 5;
    if ((size_t)(prog - p) < fixed)
        return bad(v, msg, msglen, ".debug_line", "the unit header is too short");
    uint8_t min_inst = p[0];
    size_t k = 1;
    if (ver >= 4)
        k++; /* maximum_operations_per_instruction: 1 on GPUs (no VLIW) */
    /* default_is_stmt is p[k], unused: every row is kept. */
    int8_t line_base = (int8_t)p[k + 1];
    uint8_t line_range = p[k + 2], opcode_base = p[k + 3];
    p += k + 4;
    if (line_range == 0 || opcode_base == 0)
        return bad(v, msg, msglen, ".debug_line", "line_range or opcode_base is 0");
    if ((size_t)(prog - p) < (size_t)(opcode_base - 1))
        return bad(v, msg, msglen, ".debug_line", "standard_opcode_lengths cut off");
    const uint8_t *oplen = p;
    p += opcode_base - 1;
    /* include_directories, then file_names: NUL-terminated lists. */
    const char *dirs[256];
    size_t ndirs = 0;
    while (p < prog && *p) {
        const char *d = (const char *)p;
        const uint8_t *z = memchr(p, '\0', (size_t)(prog - p));
        if (z == NULL)
            return bad(v, msg, msglen, ".debug_line", "a directory name is not terminated");
        if (ndirs < 256)
            dirs[ndirs++] = d;
        p = z + 1;
    }
    p++;
    x->file_base = (uint32_t)x->c->nfiles;
    x->nfiles_unit = 0;
    while (p < prog && *p) {
        const char *name = (const char *)p;
        const uint8_t *z = memchr(p, '\0', (size_t)(prog - p));
        uint64_t di, mtime, size;
        if (z == NULL)
            return bad(v, msg, msglen, ".debug_line", "a file name is not terminated");
        p = z + 1;
        if (uleb(&p, prog, &di) || uleb(&p, prog, &mtime) || uleb(&p, prog, &size))
            return bad(v, msg, msglen, ".debug_line", "a file entry is cut off");
        int rc = add_file(x, di >= 1 && di <= ndirs ? dirs[di - 1] : NULL, name);
        if (rc != 0)
            return rc == ARGUS_ELIMIT ? bad(v, msg, msglen, ".debug_line", "more than 4096 files")
                                      : rc;
        x->nfiles_unit++;
    }
    /* The state machine (DWARF 2, 6.2.2). */
    p = prog;
    uint64_t addr = 0, file = 1, line = 1;
    uint32_t section = 0;
    while (p < uend) {
        uint8_t op = *p++;
        int rc = 0;
        if (op >= opcode_base) {
            unsigned adj = (unsigned)(op - opcode_base);
            addr += (uint64_t)(adj / line_range) * min_inst;
            line += (uint64_t)(int64_t)(line_base + (int)(adj % line_range));
            rc = add_row(x, section, addr, file, line);
        } else if (op == 0) {
            uint64_t n;
            if (uleb(&p, uend, &n) || n == 0 || n > (uint64_t)(uend - p))
                return bad(v, msg, msglen, ".debug_line", "an extended opcode is cut off");
            const uint8_t *q = p;
            p += n;
            if (q[0] == LNE_end_sequence) {
                addr = 0, file = 1, line = 1, section = 0;
            } else if (q[0] == LNE_set_address) {
                if (n != 9)
                    return bad(v, msg, msglen, ".debug_line", "set_address is not 8 bytes");
                memcpy(&addr, q + 1, 8);
                /* Placed by its relocation: the symbol's section, and the
                 * symbol's value plus the addend (RELA) as the address. */
                size_t at = (size_t)(q + 1 - sec);
                section = 0;
                for (size_t r = 0; r < x->nrela; r++) {
                    if (x->rela[r].r_offset != at)
                        continue;
                    size_t si = ELF64_R_SYM(x->rela[r].r_info);
                    if (ELF64_R_TYPE(x->rela[r].r_info) != ARGUS__R_CUDA_64 || si >= x->nsym ||
                        x->sym[si].st_shndx == SHN_UNDEF || x->sym[si].st_shndx >= SHN_LORESERVE)
                        break;
                    section = x->sym[si].st_shndx;
                    addr = x->sym[si].st_value + (uint64_t)x->rela[r].r_addend;
                    break;
                }
            }
            /* define_file and vendor extensions: not used by nvcc, skipped. */
        } else if (op == LNS_copy) {
            rc = add_row(x, section, addr, file, line);
        } else if (op == LNS_advance_pc) {
            uint64_t n;
            if (uleb(&p, uend, &n))
                return bad(v, msg, msglen, ".debug_line", "advance_pc cut off");
            addr += n * min_inst;
        } else if (op == LNS_advance_line) {
            int64_t d;
            if (sleb(&p, uend, &d))
                return bad(v, msg, msglen, ".debug_line", "advance_line cut off");
            line += (uint64_t)d;
        } else if (op == LNS_set_file) {
            if (uleb(&p, uend, &file))
                return bad(v, msg, msglen, ".debug_line", "set_file cut off");
        } else if (op == LNS_const_add_pc) {
            addr += (uint64_t)((255 - opcode_base) / line_range) * min_inst;
        } else if (op == LNS_fixed_advance_pc) {
            uint16_t d;
            if (uend - p < 2)
                return bad(v, msg, msglen, ".debug_line", "fixed_advance_pc cut off");
            memcpy(&d, p, 2);
            p += 2;
            addr += d;
        } else {
            /* Other standard opcodes (set_column, negate_stmt, ...): skip
             * their ULEB operands, as many as the header says. */
            for (unsigned a = 0; a < oplen[op - 1]; a++) {
                uint64_t skip;
                if (uleb(&p, uend, &skip))
                    return bad(v, msg, msglen, ".debug_line", "an opcode's operand is cut off");
            }
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int read_lines(argus_cubin *c, const elf_view *v, size_t symsec, char *msg, size_t msglen)
{
    size_t ns = v->eh->e_shnum, dl = 0, rl = 0;
    for (size_t i = 1; i < ns; i++) {
        const char *n = sec_name(v, i);
        if (n && strcmp(n, ".debug_line") == 0)
            dl = i;
        else if (n && strcmp(n, ".rela.debug_line") == 0 && v->sh[i].sh_type == SHT_RELA)
            rl = i;
    }
    if (dl == 0)
        return 0; /* no line information: built without -lineinfo or -G */
    line_ctx x = {.c = c};
    const uint8_t *p = NULL;
    size_t n = 0;
    sec_bytes(v, symsec, &p, &n);
    x.sym = (const Elf64_Sym *)p;
    x.nsym = n / sizeof(Elf64_Sym);
    if (rl) {
        sec_bytes(v, rl, &p, &n);
        if (v->sh[rl].sh_entsize != sizeof(Elf64_Rela) || (uintptr_t)p % 8 != 0)
            return bad(v, msg, msglen, ".rela.debug_line", "entries are not Elf64_Rela");
        x.rela = (const Elf64_Rela *)p;
        x.nrela = n / sizeof(Elf64_Rela);
    }
    const uint8_t *sec = NULL;
    size_t seclen = 0;
    sec_bytes(v, dl, &sec, &seclen);
    for (size_t u = 0; u < seclen;) {
        size_t next = seclen;
        int rc = line_unit(&x, v, sec, seclen, u, &next, msg, msglen);
        if (rc != 0)
            return rc;
        u = next;
    }
    if (c->nlines)
        qsort(c->lines, c->nlines, sizeof(argus_cubin_line), cmp_line);
    c->has_lines = 1;
    return 0;
}

int argus_cubin_parse(const void *img, size_t len, const char *where, argus_cubin *out, char *msg,
                      size_t msglen)
{
    if (out == NULL || (img == NULL && len))
        return ARGUS_EINVAL;
    memset(out, 0, sizeof(*out));
    elf_view v = {.b = img, .len = len, .where = where};
    int rc = open_view(&v, msg, msglen);
    if (rc != 0)
        return rc;
    size_t ns = v.eh->e_shnum, symsec = 0;
    for (size_t i = 1; i < ns; i++)
        if (v.sh[i].sh_type == SHT_SYMTAB)
            symsec = i;
    if (symsec == 0)
        return bad(&v, msg, msglen, ".symtab", "no symbol table: the functions cannot be found");
    const Elf64_Shdr *ss = &v.sh[symsec];
    const uint8_t *sp = NULL, *strp = NULL;
    size_t sn = 0, strn = 0;
    sec_bytes(&v, symsec, &sp, &sn);
    if (ss->sh_entsize != sizeof(Elf64_Sym) || (uintptr_t)sp % 8 != 0 || ss->sh_link >= ns ||
        v.sh[ss->sh_link].sh_type != SHT_STRTAB)
        return bad(&v, msg, msglen, ".symtab", "entries are not Elf64_Sym, or no string table");
    sec_bytes(&v, ss->sh_link, &strp, &strn);
    const Elf64_Sym *sym = (const Elf64_Sym *)sp;
    size_t nsym = sn / sizeof(Elf64_Sym), cap = 0;
    for (size_t i = 0; i < nsym; i++) {
        const Elf64_Sym *s = &sym[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
            s->st_shndx >= ns)
            continue;
        const char *sname = sec_name(&v, s->st_shndx);
        if (sname == NULL || strncmp(sname, ".text.", 6) != 0)
            continue;
        const char *name = str_at((const char *)strp, strn, s->st_name);
        if (name == NULL || name[0] == '\0') {
            rc = bad(&v, msg, msglen, ".symtab", "a function symbol's name is outside .strtab");
            goto fail;
        }
        uint64_t ssize = v.sh[s->st_shndx].sh_size;
        if (s->st_value > ssize || s->st_size > ssize - s->st_value) {
            rc = bad(&v, msg, msglen, ".symtab",
                     "a function's address range runs past the end of its .text section");
            goto fail;
        }
        if (argus__grow((void **)&out->fn, &cap, out->nfn + 1, sizeof(argus_cubin_func)) != 0) {
            rc = ARGUS_ENOMEM;
            goto fail;
        }
        argus_cubin_func *f = &out->fn[out->nfn];
        memset(f, 0, sizeof(*f));
        if ((f->name = strdup(name)) == NULL) {
            rc = ARGUS_ENOMEM;
            goto fail;
        }
        out->nfn++;
        f->section = s->st_shndx;
        f->lo = s->st_value;
        f->hi = s->st_value + s->st_size;
        f->entry = (s->st_other & ARGUS__STO_CUDA_ENTRY) != 0 ||
                   (ELF64_ST_BIND(s->st_info) == STB_GLOBAL && strcmp(sname + 6, name) == 0);
        f->kernel = -1;
    }
    /* A function's kernel: the entry function of its section. */
    for (size_t i = 0; i < out->nfn; i++)
        for (size_t k = 0; k < out->nfn; k++)
            if (out->fn[k].entry && out->fn[k].section == out->fn[i].section) {
                out->fn[i].kernel = (int32_t)k;
                break;
            }
    if ((rc = read_lines(out, &v, symsec, msg, msglen)) != 0)
        goto fail;
    return 0;
fail:
    argus_cubin_free(out);
    return rc == ARGUS_ENOMEM ? argus__fail(rc, msg, msglen, "%s: out of memory reading the cubin",
                                            where ? where : "<cubin>")
                              : rc;
}

void argus_cubin_free(argus_cubin *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->nfn; i++)
        free(c->fn[i].name);
    for (size_t i = 0; i < c->nfiles; i++)
        free(c->files[i]);
    free(c->fn);
    free(c->files);
    free(c->lines);
    memset(c, 0, sizeof(*c));
}

int argus_cubin_locate(const argus_cubin *c, const char *function, uint64_t pc_offset,
                       argus_cubin_pc *out, char *msg, size_t msglen)
{
    if (c == NULL || function == NULL || out == NULL)
        return ARGUS_EINVAL;
    memset(out, 0, sizeof(*out));
    out->func = out->kernel = -1;
    const argus_cubin_func *base = NULL;
    for (size_t i = 0; i < c->nfn && base == NULL; i++)
        if (strcmp(c->fn[i].name, function) == 0)
            base = &c->fn[i];
    if (base == NULL)
        return argus__fail(ARGUS_ENOREGION, msg, msglen,
                           "function %s is not a function symbol of the cubin (a cubin of "
                           "another module, or one whose symbols were stripped?)",
                           function);
    if (pc_offset > UINT64_MAX - base->lo)
        return argus__fail(ARGUS_ENOREGION, msg, msglen, "pc offset 0x%llx of %s overflows",
                           (unsigned long long)pc_offset, function);
    uint64_t a = base->lo + pc_offset;
    out->section = base->section;
    out->offset = a;
    /* The innermost (shortest) function whose range holds the address. */
    uint64_t best = UINT64_MAX;
    for (size_t i = 0; i < c->nfn; i++) {
        const argus_cubin_func *f = &c->fn[i];
        if (f->section == base->section && a >= f->lo && a < f->hi && f->hi - f->lo < best) {
            best = f->hi - f->lo;
            out->func = (int32_t)i;
        }
    }
    if (out->func < 0)
        return argus__fail(ARGUS_ENOREGION, msg, msglen,
                           "pc offset 0x%llx of %s (section offset 0x%llx) is outside every "
                           "function of its section: a PC of another build of this module?",
                           (unsigned long long)pc_offset, function, (unsigned long long)a);
    out->kernel = c->fn[out->func].kernel;
    /* The last line row at or before the address in that section. */
    size_t lo = 0, hi = c->nlines;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const argus_cubin_line *l = &c->lines[mid];
        if (l->section < out->section || (l->section == out->section && l->addr <= a))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && c->lines[lo - 1].section == out->section) {
        out->file = c->files[c->lines[lo - 1].file];
        out->line = c->lines[lo - 1].line;
    }
    return 0;
}

/* "$KERNEL$NAME", nvcc's name of a device function's copy inside KERNEL,
 * gives NAME; other names are returned as they are. */
const char *argus_cubin_func_base_name(const char *name)
{
    if (name == NULL || name[0] != '$')
        return name;
    const char *d = strchr(name + 1, '$');
    return d && d[1] ? d + 1 : name;
}
