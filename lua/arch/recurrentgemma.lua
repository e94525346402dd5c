-- RG-LRU as RecurrentGemma 2B and 9B release it: heads of 256 channels
-- (lru_width 2560 in 10 heads, 4096 in 16; BlockDiagonalLinear's blocks are
-- 256 x 256). The lines are lua/arch/rglru_heads.lua's, with K = 256; the
-- mixer keeps the name rglru, so verify judges it by ref/'s RG-LRU.
return require "arch.rglru_heads" (256)
