-- expect: build nospill  the three published mixers of lua/arch (minGRU, HGRN, Mamba-2-style), every variant of their grids
return require "variants.examples"
