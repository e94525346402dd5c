file(REMOVE_RECURSE
  "librecur_gen.a"
)
