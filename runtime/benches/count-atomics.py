#!/usr/bin/env python3
"""Atomic read-modify-writes per operation, from a callgrind profile.

Counts the executed `lock`-prefixed instructions (and `xchg` with memory,
locked implicitly) of the bench binary: reference-count changes, mutex
lock and unlock, once-cell and semaphore updates. Each costs tens of
cycles whatever its instruction count, so these explain timings that
instruction counts alone do not.

    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=cg.out \\
        --toggle-collect='per_op::measured*' <per_op binary> --only CASE N
    objdump -d --no-show-raw-insn <per_op binary> > per_op.dis
    runtime/benches/count-atomics.py cg.out N per_op.dis

The bench's counting allocator (two counters per allocation) is left out.
x86-64 only.
"""

import collections
import re
import sys


def locked_addresses(disassembly):
    locked = set()
    with open(disassembly) as lines:
        for line in lines:
            match = re.match(r"\s*([0-9a-f]+):\s+(.*)", line)
            if not match:
                continue
            text = match.group(2)
            if text.startswith("lock ") or (text.startswith("xchg ") and "(" in text):
                locked.add(int(match.group(1), 16))
    return locked


def named(value, table):
    """Callgrind's name compression: `(7) name` defines, `(7)` refers."""
    match = re.match(r"\((\d+)\)(?: (.*))?", value)
    if not match:
        return value
    if match.group(2):
        table[match.group(1)] = match.group(2)
    return table.get(match.group(1), value)


def count(profile, locked):
    per_function = collections.Counter()
    objects, functions = {}, {}
    obj = function = None
    address = 0
    after_call = False
    with open(profile) as lines:
        for line in lines:
            line = line.rstrip("\n")
            if line.startswith("ob="):
                obj = named(line[3:], objects)
            elif line.startswith("fn="):
                function = named(line[3:], functions)
            elif line.startswith("cob="):
                named(line[4:], objects)
            elif line.startswith("cfn="):
                named(line[4:], functions)
            elif line.startswith("calls="):
                # The next cost line is the call's inclusive cost.
                after_call = True
            else:
                match = re.match(r"^(0x[0-9a-f]+|\+\d+|-\d+|\*)\s", line)
                if not match:
                    continue
                position = match.group(1)
                if position.startswith("0x"):
                    address = int(position, 16)
                elif position.startswith("+"):
                    address += int(position[1:])
                elif position.startswith("-"):
                    address -= int(position[1:])
                if after_call:
                    after_call = False
                    continue
                fields = line.split()
                if len(fields) < 3 or address not in locked:
                    continue
                if obj and "per_op" in obj:
                    per_function[function] += int(fields[2])
    return per_function


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    profile, operations, disassembly = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    per_function = count(profile, locked_addresses(disassembly))
    counted = {
        name: total / operations
        for name, total in per_function.items()
        if "__rust_alloc" not in (name or "")
    }
    print(f"atomic read-modify-writes per operation: {sum(counted.values()):.1f}")
    for name, per_op in sorted(counted.items(), key=lambda item: -item[1]):
        if per_op >= 0.5:
            print(f"{per_op:6.1f}  {name}")


if __name__ == "__main__":
    main()
