"""guest/lib's shared state: one copy per program, however many .c files.

A program split into several .c files must restore, from any of them, the
settings another one saved (set_setting()), and count in bytes_checked=
the bytes every one of them checked. With that state as statics in the
headers, each file had its own copy, and both went wrong silently.
"""

import shutil
import subprocess

import pytest

from lab.molab.util import GUEST

CC = shutil.which("cc") or shutil.which("gcc")

SAVER = r"""
#include "mo_pages.h"
#include "mo_pattern.h"
int save_elsewhere(const char *path) { return set_setting(path, "xxxx"); }
size_t check_elsewhere(const void *p, size_t len)
{
	return mo_pattern_verify(p, 0, len, 1, NULL);
}
"""

MAIN = r"""
#include <stdio.h>
#include "mo_pages.h"
#include "mo_pattern.h"
int save_elsewhere(const char *path);
size_t check_elsewhere(const void *p, size_t len);
int main(int argc, char **argv)
{
	static uint64_t buf[512];
	char val[64] = "";

	(void)argc;
	if (save_elsewhere(argv[1]))
		return 2;
	restore_settings();
	read_setting(argv[1], val, sizeof(val));
	mo_pattern_fill(buf, 0, sizeof(buf), 1);
	check_elsewhere(buf, sizeof(buf));
	printf("%s %llu\n", val, mo_bytes_checked);
	return 0;
}
"""


@pytest.mark.skipif(not CC, reason="no C compiler")
def test_state_is_shared_by_every_file_of_a_program(tmp_path):
    (tmp_path / "saver.c").write_text(SAVER)
    (tmp_path / "main.c").write_text(MAIN)
    exe = tmp_path / "prog"
    r = subprocess.run([CC, "-Wall", "-Wextra", "-Werror", "-I", str(GUEST / "lib"),
                        "-o", str(exe), str(tmp_path / "main.c"), str(tmp_path / "saver.c"),
                        str(GUEST / "lib" / "mo_state.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    setting = tmp_path / "setting"
    setting.write_text("orig\n")
    r = subprocess.run([str(exe), str(setting)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # saved in one file, put back from another; bytes checked in one, counted in the other
    assert r.stdout.split() == ["orig", "4096"]
