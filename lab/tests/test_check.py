from lab.molab import check


def test_touched_dirs():
    files = ["mm/migrate.c", "mm/migrate_copy.c", "include/linux/migrate.h",
             "drivers/dma/dmatest_sw.c", "Documentation/x.rst", "top.c",
             "tools/testing/selftests/mm/migrate_offload.c"]
    assert check.touched_dirs(files) == ["drivers/dma", "mm"]


def test_new_warnings_only_on_changed_lines():
    changed = {"mm/migrate.c": {10, 11, 12}, "mm/new.c": set(range(1, 100))}
    log = "\n".join([
        "/src/linux/mm/migrate.c:11:5: warning: no previous prototype for 'f' [-Wmissing-prototypes]",
        "/src/linux/mm/migrate.c:500:1: warning: old warning [-Wfoo]",
        "mm/new.c:3:9: warning: unused variable 'x' [-Wunused-variable]",
        "/src/linux/mm/other.c:11:5: warning: elsewhere",
        "  CC      mm/migrate.o",
    ])
    got = check.new_warnings(log, changed, "/src/linux")
    assert [(f, n) for f, n, _ in got] == [("mm/migrate.c", 11), ("mm/new.c", 3)]
