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


def jump_label_sites(path):
    """Addresses of every jump-label instruction of an x86-64 vmlinux."""
    data = _read(path)
    secs, _ = _sections(data)
    out = []
    for s in secs:
        if s["name"] != "__jump_table":
            continue
        for i in range(s["size"] // JUMP_ENTRY.size):
            code, _target, _key = JUMP_ENTRY.unpack_from(data, s["off"] + i * JUMP_ENTRY.size)
            out.append(s["addr"] + i * JUMP_ENTRY.size + code)
    return out


def function_symbols(path):
    """{function name: [addresses]} from the symbol table (static names repeat)."""
    data = _read(path)
    secs, cstr = _sections(data)
    out = {}
    for s in secs:
        if s["type"] != SHT_SYMTAB:
            continue
        names = secs[s["link"]]
        for i in range(s["size"] // 24):
            st_name, st_info, _other, _shndx, value, _size = struct.unpack_from(
                "<IBBHQQ", data, s["off"] + i * 24)
            if st_info & 0xF == STT_FUNC and value:
                out.setdefault(cstr(names, st_name), []).append(value)
    return out
