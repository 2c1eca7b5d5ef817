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


# The settings a program saved go back when it exits or is killed (a
# suite's timeout sends SIGTERM), not when a child it forked exits; the
# hook another file of the program set runs first.
HOOKED = r"""
#include <stdio.h>
#include "mo_pages.h"
static void say_hook(void) { printf("hook %d\n", getpid() == getpgrp()); fflush(stdout); }
int save_and_hook(const char *path)
{
	mo_before_restore = say_hook;
	return set_setting(path, "xxxx");
}
"""

EXITING = r"""
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include "mo_pages.h"
int save_and_hook(const char *path);
int main(int argc, char **argv)
{
	char val[64] = "";
	pid_t pid;

	(void)argc;
	setpgid(0, 0);
	restore_settings_at_exit();
	if (save_and_hook(argv[1]))
		return 2;
	pid = fork();
	if (pid == 0)
		exit(0);		/* the child's exit puts nothing back */
	waitpid(pid, NULL, 0);
	read_setting(argv[1], val, sizeof(val));
	printf("after child %s\n", val);
	fflush(stdout);
	if (!strcmp(argv[2], "term"))
		raise(SIGTERM);
	return 0;
}
"""


@pytest.mark.skipif(not CC, reason="no C compiler")
@pytest.mark.parametrize("how,rc", [("exit", 0), ("term", -15)])
def test_settings_go_back_at_exit_and_on_sigterm_not_at_a_childs_exit(tmp_path, how, rc):
    (tmp_path / "hooked.c").write_text(HOOKED)
    (tmp_path / "main.c").write_text(EXITING)
    exe = tmp_path / "prog"
    r = subprocess.run([CC, "-Wall", "-Wextra", "-Werror", "-I", str(GUEST / "lib"),
                        "-o", str(exe), str(tmp_path / "main.c"), str(tmp_path / "hooked.c"),
                        str(GUEST / "lib" / "mo_state.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    setting = tmp_path / "setting"
    setting.write_text("orig\n")
    r = subprocess.run([str(exe), str(setting), how], capture_output=True, text=True)
    assert r.returncode == rc, r.stderr
    # the child ran the hook (the hook decides for itself) but wrote nothing;
    # the program's own end ran it and put the value back
    assert r.stdout.splitlines() == ["hook 0", "after child xxxx", "hook 1"]
    assert setting.read_text() == "orig\n"
