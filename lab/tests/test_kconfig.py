from lab.molab import kconfig


def test_parse_fragment():
    frag = kconfig.parse("# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"str\"\n"
                         "CONFIG_D=0x10\nCONFIG_E=n\n  \nnot a line\n")
    assert frag == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": '"str"', "CONFIG_D": "0x10",
                    "CONFIG_E": "n"}


def test_later_fragments_win():
    base = kconfig.parse("CONFIG_DEBUG_KERNEL=y\nCONFIG_X=1\n")
    perf = kconfig.parse("CONFIG_DEBUG_KERNEL=n\n")
    merged = kconfig.merge([base, perf])
    assert merged == {"CONFIG_X": "1", "CONFIG_DEBUG_KERNEL": "n"}


def test_verify():
    req = {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": "n", "CONFIG_D": "m",
           "CONFIG_E": "y", "CONFIG_F": "60", "CONFIG_G": '"x"', "CONFIG_H": "0x10"}
    actual = kconfig.parse("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_D=y\n"
                           "# CONFIG_E is not set\nCONFIG_F=60\nCONFIG_G=\"x\"\nCONFIG_H=0X10\n")
    bad = kconfig.verify(req, actual)
    assert bad == ["CONFIG_D: requested m, got y",
                   "CONFIG_E: requested y, got not set (unmet dependency?)"]


def test_verify_absent_and_n():
    bad = kconfig.verify({"CONFIG_X": "y", "CONFIG_Y": "n"}, {"CONFIG_Y": "y"})
    assert bad == ["CONFIG_X: requested y, absent (unmet dependency?)",
                   "CONFIG_Y: requested n, got y"]


def test_verify_files(tmp_path):
    (tmp_path / "a.config").write_text("CONFIG_A=y\nCONFIG_B=y\n")
    (tmp_path / "b.config").write_text("CONFIG_B=n\n")
    (tmp_path / ".config").write_text("CONFIG_A=y\nCONFIG_B=y\n")
    assert kconfig.verify_files([tmp_path / "a.config", tmp_path / "b.config"],
                                tmp_path / ".config") == ["CONFIG_B: requested n, got y"]


def test_repo_fragments_parse():
    from lab.molab.util import CONFIGS
    for name in ("base", "debug", "perf"):
        path = CONFIGS / f"{name}.config"
        if path.exists():
            assert kconfig.parse_file(path), name
