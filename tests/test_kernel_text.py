"""Seed 004's kernel-text measurement (`s004_tlb_lockdown.kernel_text.spans`) on a small
System.map: sections counted from `_stext`, a function that crosses a section boundary counted in
both, a name defined twice counted at both places, a name not in the map reported."""

import pytest

from tlblab.errors import UserError
from tlblab.seeds.s004_tlb_lockdown import experiments
from tlblab.seeds.s004_tlb_lockdown.kernel_text import read_map, spans

MAP = """\
c0208000 T _text
c0300000 T _stext
c0300100 T entry
c0400010 t twice
c04ffff0 T crosses
c0500010 T inside
c0500100 T gap
c0700000 t twice
c0700100 T tail
c0e00000 D _etext
"""


def test_spans_count_sections_from_stext(tmp_path):
    p = tmp_path / "System.map"
    p.write_text(MAP)
    r = spans(read_map(p), {"a": ("entry", "crosses", "nope"), "b": ("twice", "inside")})
    assert r["text_sections"] == 11
    assert r["paths"]["a"]["sections"] == [0, 1, 2]  # crosses spans 0xc04 and 0xc05
    assert r["paths"]["a"]["missing"] == ["nope"]
    assert r["paths"]["b"]["sections"] == [1, 2, 4]
    assert r["paths"]["b"]["mask"] == 0b10110
    assert r["union"] == [0, 1, 2, 4]


def test_a_map_without_stext_is_refused(tmp_path):
    p = tmp_path / "System.map"
    p.write_text("c0300100 T entry\n")
    with pytest.raises(UserError, match="_stext"):
        spans(read_map(p), {"a": ("entry",)})


def test_the_experiments_masks_are_the_measured_sections():
    # experiments.py copies the measurement's result (kernel_text.py's docstring): 3 sections a
    # path, 5 together, within the 11 of the measured kernel's text.
    masks = (experiments.SYSCALL_TEXT_SECTIONS, experiments.TICK_TEXT_SECTIONS,
             experiments.FAULT_TEXT_SECTIONS)
    assert [bin(m).count("1") for m in masks] == [3, 3, 3]
    assert bin(masks[0] | masks[1] | masks[2]).count("1") == 5
    assert all(m < 1 << 11 for m in masks)
    assert experiments.OS["syscall_text_sections"] == masks[0]


def test_the_experiments_clear_highmem_frames_and_map_kernel_data_by_sections():
    # The board's user frames are high memory (1 GiB under the 3G/1G split), cleared through
    # kmap_atomic's fixmap page, and its kernel data is low memory in 1 MiB sections: seed 004's
    # OS turns both on, and the linear map's clear off (one clear a fault).
    assert experiments.OS["fault_highmem"] and experiments.OS["kernel_data_sections"]
    assert not experiments.OS.get("fault_linear_map", False)


def test_both_clears_at_once_are_one_error_naming_the_knob():
    from tlblab.sim import simulate

    with pytest.raises(ValueError, match=r"^os\.fault_highmem: a fault clears its frame once"):
        simulate("cortex-a9", "random:pages=16,accesses=100",
                 os={**experiments.OS, "fault_linear_map": True})


def test_the_armv7_tables_clear_whole_pages_and_unmap_as_preempt_rt():
    # Issue 87's mechanisms: the seed's ISA's tables store the whole 4 KiB clear (Linux's
    # clear_page) and take PREEMPT_RT's kunmap_atomic (the seed's 4.14-rt kernel); the x86
    # tables keep the OS they were run with, so their runs are unchanged.
    arm, x86 = experiments.os_of("armv7"), experiments.os_of("x86")
    assert arm["fault_clear_lines"] and arm["kunmap_flush"] and arm["fault_highmem"]
    assert x86 == experiments.OS
    assert not x86.get("fault_clear_lines", False) and not x86.get("kunmap_flush", False)
    assert {k: v for k, v in arm.items() if k not in ("fault_clear_lines", "kunmap_flush")} == x86
