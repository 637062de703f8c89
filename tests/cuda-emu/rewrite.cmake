# cmake -DIN=kernel.cu -DOUT=kernel.cc -P rewrite.cmake
#
# Makes a .cu file compile as C++ for halo-cuda-emu: each launch
#   kernel<<<grid, block, shared, stream>>>(args)
# becomes
#   kernel | ::halo_emu::configure(__FILE__, __LINE__, grid, block, shared, stream)(args)
# (include/cuda_runtime.h says what that does).  A #line directive keeps
# compiler messages and __FILE__ on the original file.
file(READ "${IN}" text)
string(REPLACE "<<<" " | ::halo_emu::configure(__FILE__, __LINE__, " text "${text}")
string(REPLACE ">>>" ")" text "${text}")
file(WRITE "${OUT}.tmp" "#line 1 \"${IN}\"\n${text}")
file(RENAME "${OUT}.tmp" "${OUT}")
