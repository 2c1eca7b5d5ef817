"""Just enough ELF64 reading to tell where a vmlinux patches its own text.

Used by the console judge: an int3 oops under multi-threaded TCG is excused
as the known emulator fault only if it hit a jump-label site (see
console.PatchSites). No dependency beyond the standard library.
"""

import struct

SHT_SYMTAB = 2
STT_FUNC = 2
JUMP_ENTRY = struct.Struct("<iiq")   # x86-64 relative jump_entry: code, target, key


def _sections(data):
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = []
    for i in range(shnum):
        (name, typ, _flags, addr, off, size, link, _info, _align,
         entsize) = struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append({"name": name, "type": typ, "addr": addr, "off": off, "size": size,
                     "link": link, "entsize": entsize})
    strtab = secs[shstrndx]

    def cstr(tab, idx):
        start = tab["off"] + idx
        return data[start:data.index(b"\0", start)].decode(errors="replace")
    for s in secs:
        s["name"] = cstr(strtab, s["name"])
    return secs, cstr


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _symbols(data, secs, cstr):
    """(name, value, st_info) of every symbol."""
    for s in secs:
        if s["type"] != SHT_SYMTAB:
            continue
        names = secs[s["link"]]
        for i in range(s["size"] // 24):
            st_name, st_info, _other, _shndx, value, _size = struct.unpack_from(
                "<IBBHQQ", data, s["off"] + i * 24)
            yield cstr(names, st_name), value, st_info


def _file_offset(secs, addr):
    for s in secs:
        if s["type"] != 8 and s["addr"] and s["addr"] <= addr < s["addr"] + s["size"]:
            return s["off"] + addr - s["addr"]          # (8 = SHT_NOBITS)
    raise ValueError(f"address 0x{addr:x} is in no section with contents")


def jump_label_sites(path):
    """Addresses of every jump-label instruction of an x86-64 vmlinux.

    The x86 linker script puts the table inside .data between
    __start___jump_table and __stop___jump_table; a file without those
    symbols (a module) has it as a section of its own.
    """
    data = _read(path)
    secs, cstr = _sections(data)
    bounds = {n: v for n, v, _ in _symbols(data, secs, cstr)
              if n in ("__start___jump_table", "__stop___jump_table")}
    if len(bounds) == 2:
        start, stop = bounds["__start___jump_table"], bounds["__stop___jump_table"]
        tables = [(start, _file_offset(secs, start), stop - start)]
    else:
        tables = [(s["addr"], s["off"], s["size"]) for s in secs if s["name"] == "__jump_table"]
    out = []
    for addr, off, size in tables:
        for i in range(size // JUMP_ENTRY.size):
            code, _target, _key = JUMP_ENTRY.unpack_from(data, off + i * JUMP_ENTRY.size)
            out.append(addr + i * JUMP_ENTRY.size + code)
    return out


def function_symbols(path):
    """{function name: [addresses]} from the symbol table (static names repeat)."""
    data = _read(path)
    secs, cstr = _sections(data)
    out = {}
    for name, value, info in _symbols(data, secs, cstr):
        if info & 0xF == STT_FUNC and value:
            out.setdefault(name, []).append(value)
    return out
