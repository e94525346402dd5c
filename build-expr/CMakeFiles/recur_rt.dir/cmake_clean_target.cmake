file(REMOVE_RECURSE
  "librecur_rt.a"
)
