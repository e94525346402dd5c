-- RG-LRU with heads of 64 channels: the spec's and the seed's mixer. Its
-- lines are lua/arch/rglru_heads.lua's, with K = 64.
return require "arch.rglru_heads" (64)
