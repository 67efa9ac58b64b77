"""SimAI topology files: those written by SimAI's own generator (tests/data/simai, made with
aliyun/SimAI's gen_Topo_Template.py -topo AlibabaHPN [--dp] -g 8|16 -gps 2 -npa 2|4 -asn 8 -psn 4
-app 8 -bw 200Gbps -apbw 400Gbps) read into HPN7 and written back unchanged. No root."""
from pathlib import Path

import pytest

from testbed.errors import TestbedError
from testbed.topology import HPN7, from_spec, simai

DATA = Path(__file__).parent / "data" / "simai"
FILES = sorted(DATA.iterdir())


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_a_simai_file_is_the_equal_hpn7_and_is_written_back_unchanged(path):
    topo = from_spec(f"simai:{path}", rate=10, queue=100)
    gpus = int(path.name.split("_")[1][:-1])
    assert isinstance(topo, HPN7) and len(topo.hosts) == gpus
    assert topo.planes == (2 if "DualPlane" in path.name else 1)
    # SimAI's single plane links every ToR to all four aggregation switches: one plane of four
    assert (topo.rails, topo.aggs) == (2, 2 if topo.planes == 2 else 4)
    assert topo.segments * topo.servers * topo.rails == gpus
    uplinks = {link.rate for link in topo.fabric_links()}
    assert uplinks == {20.0}                  # 400 Gbps against the NICs' 200: twice the NIC rate
    assert simai.dump(topo) == path.read_text()


def test_any_hpn7_round_trips_through_the_simai_format(tmp_path):
    for planes in (1, 2):
        topo = HPN7(2, 3, 2, 2, planes=planes)
        path = tmp_path / f"p{planes}.topo"
        path.write_text(simai.dump(topo))
        back = from_spec(f"simai:{path}")
        assert back.name == topo.name
        assert sorted((x.a, x.b) for x in back.links) == sorted((x.a, x.b) for x in topo.links)


def test_files_that_are_not_hpn_fabrics_are_refused_in_one_line(tmp_path):
    good = FILES[0].read_text().splitlines()
    src, _, *rest = good[3].split()                     # GPU 0's first NIC link: cable it to GPU 1's ToR
    rewired = good[:3] + [" ".join([src, good[6].split()[1], *rest])] + good[4:]
    cases = {"garbage": "hello\n", "short": "\n".join(good[:-1]) + "\n", "rewired": "\n".join(rewired) + "\n"}
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(TestbedError) as err:
            from_spec(f"simai:{path}")
        assert "\n" not in str(err.value) and str(path) in str(err.value)
    with pytest.raises(TestbedError, match="only dual-ToR HPN7"):
        simai.dump(from_spec("bigraph:2,8"))
