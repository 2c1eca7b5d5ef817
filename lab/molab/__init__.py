"""molab: the host-side lab of migrate-offload.

Build the kernel series (tree, kernel), pack a guest (initramfs), boot it in
QEMU with three NUMA nodes (qemu.boot) and judge the console (console,
results, ktap). Entry point: python3 -m lab.molab <command>.
"""
