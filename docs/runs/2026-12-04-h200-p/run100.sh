#!/bin/bash
# Run 100: kernels/bench/launch_shape_probe.cu: one call of a no-work one-node graph on an idle
# stream, by kernel shape (1 x 32; 128 x 256; + 32 KiB shared; + cooperative; 132 blocks).
set -u
for i in 1 2; do .gpu/exp/launch_shape_probe; done
