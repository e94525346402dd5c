file(REMOVE_RECURSE
  "librecur_script.a"
)
