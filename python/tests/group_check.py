"""A group write through the hub from the Python client, verified.

Run by the Go test TestHubGroupWrite (cmd/oetp group_net_test.go) with
OETP_HUB (the hub's socket) and OETP_TEST_GROUP (a group of two devices,
OETP_TEST_MEMBERS their names, comma-separated). It writes a block to the
group with verify=True, checks the per-member report, reads every member
back through its own device, writes a longer block (its pacing reports the
checks between runs) and exits 0 only when all of it holds.
"""

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import oetp  # noqa: E402


def main():
    group = os.environ["OETP_TEST_GROUP"]
    members = os.environ["OETP_TEST_MEMBERS"].split(",")
    data = bytes(random.Random(25).getrandbits(8) for _ in range(100000))
    with oetp.connect() as hub:
        res = hub.group_write(group, 0x100000, data, verify=True)
        assert res["delivery"] == "verified", res
        assert res["bytes"] == len(data) and res["fragments"] == 13, res
        assert res["pacing"]["source"] == "members" and res["pacing"]["interval_us"] > 0, res["pacing"]
        assert [m["device"] for m in res["members"]] == members, res["members"]
        for m in res["members"]:
            assert m["state"] == "verified" and m["fragments_checked"] == 13 and m["repaired"] == [], m
        for name in members:
            assert hub.device(name).read_block(0x100000, len(data)) == data, name
        # More than one run of 16 fragments: the slowest member is checked
        # between runs, reported as the CLI does.
        res = hub.group_write(group, 0x100000, data * 3, verify=True)
        p = res["pacing"]
        assert res["delivery"] == "verified" and res["fragments"] > 32 and len(p["checks_us"]) == (res["fragments"] - 1) // 16, res
        assert all(c > 0 for c in p["checks_us"]) and p.get("raised_to_us", p["interval_us"] + 1) > p["interval_us"], p
        for name in members:
            assert hub.device(name).read_block(0x100000, 3 * len(data)) == data * 3, name
        try:
            hub.group_write("no-such-group", 0x100000, data[:4])
        except oetp.HubError as e:
            assert e.name == "NO_DEVICE" and group in e.message, e
        else:
            raise AssertionError("an unknown group was accepted")
    print("group write verified on", ", ".join(members))


if __name__ == "__main__":
    main()
