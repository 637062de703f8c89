# Sourced by the test scripts that run Python (POSIX sh):
#   . "$src/tests/find-python.sh"
#   halo_find_python 'import numpy' || { echo "...: SKIP: ..."; exit 77; }
# halo_find_python CODE sets py to the first interpreter that runs CODE
# (the imports a script needs): the python3 on PATH, else Debian's
# /usr/bin/python3 (a pyenv or venv python3 may lack the Debian packages).
# Returns 1, py empty, when neither does.
halo_find_python() {
  py=""
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c "$1" >/dev/null 2>&1; then
      py=$candidate
      return 0
    fi
  done
  return 1
}
