file(REMOVE_RECURSE
  "librecur_ref.a"
)
