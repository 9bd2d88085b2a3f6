#!/usr/bin/env bash
# The options of profilefs serve, as four places name them, are one set: the
# getopt_long table in main/main.c (what the daemon takes), the option lines
# of `profilefs serve --help`, the OPTIONS entries of the manual page
# (scripts/profilefs.8) and the option list of docs/cli.md (the command line
# reference). An option added to the table and not documented in each, or a
# documented option the daemon does not take, fails with the names that
# differ. Also: every option the README and docs/*.md mention is one the
# daemon takes.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup

# The long options of main()'s table: { "name", has_arg, NULL, val }.
sed -n '/struct option longopts\[\] = {/,/{ NULL, 0, NULL, 0 }/p' "$ROOT/main/main.c" \
  | grep -oE '\{ *"[a-z][a-z0-9-]*"' | sed -E 's/\{ *"//; s/"$//' | sort -u >"$TMP/src"
n_src=$(wc -l <"$TMP/src")
[ "$n_src" -ge 20 ] && ok "main.c's option table read ($n_src long options)" \
  || fail "main.c's option table read" "only $n_src names: has its layout changed?"

# --help: the lines that describe an option start with two spaces and the
# option ("  --data DIR ...", "  -v, --verbose ...").
"$BIN" serve --help >"$TMP/help.txt" 2>&1
check_eq "profilefs serve --help exits 0" "$?" 0
grep -oE '^  (-[a-zA-Z], )?--[a-z][a-z0-9-]*' "$TMP/help.txt" | grep -oE -- '--[a-z][a-z0-9-]*' \
  | sed 's/^--//' | sort -u >"$TMP/help"

# The manual page: the tag line after each .TP of the OPTIONS section (one
# tag may name several options: ".BR \-\-http\-max\-body ", " ...").
sed 's/\\-/-/g; s/\\f[BIRP]//g' "$ROOT/scripts/profilefs.8" \
  | awk '/^\.SH OPTIONS/ { o = 1; next } /^\.SH/ { o = 0 } o && prev == ".TP" { print } { prev = $0 }' \
  | grep -oE -- '--[a-z][a-z0-9-]*' | sed 's/^--//' | sort -u >"$TMP/man"

# docs/cli.md: each option is a list item "- `--name ARG`: ..." (or
# "- `-v`, `--verbose`: ..."); the names are those before the first ": ".
grep -E '^- `-' "$ROOT/docs/cli.md" | sed 's/`: .*//; s/`:$//' | grep -oE -- '--[a-z][a-z0-9-]*' \
  | sed 's/^--//' | sort -u >"$TMP/cli"

# differ NAME FILE: the names of FILE that are not the table's and the other way.
differ() {
  local what="$1" f="$2" missing extra
  missing=$(comm -23 "$TMP/src" "$f" | sed 's/^/--/' | tr '\n' ' ')
  extra=$(comm -13 "$TMP/src" "$f" | sed 's/^/--/' | tr '\n' ' ')
  echo "# $what: $(wc -l <"$f") options"
  if [ -z "$missing$extra" ]; then
    ok "$what names every option of main.c's table, and no other"
  else
    fail "$what names every option of main.c's table, and no other" \
      "missing: ${missing:-none}; not in the table: ${extra:-none}"
  fi
}
differ "profilefs serve --help" "$TMP/help"
differ "profilefs(8) OPTIONS" "$TMP/man"
differ "docs/cli.md" "$TMP/cli"

# Every --option the README and docs/*.md write in code (`--name`, or in a
# command line) is one the daemon takes. Options of other programs that the
# documents quote are listed here.
others="perf-basic-prof perf-basic-prof-only-functions now data-binary"
cat "$ROOT/README.md" "$ROOT"/docs/*.md \
  | grep -oE '(`|profilefs serve [^`]*|^    .*)--[a-z][a-z0-9-]*' \
  | grep -oE -- '--[a-z][a-z0-9-]*' | sed 's/^--//' | sort -u >"$TMP/docs"
unknown=""
for o in $(comm -13 "$TMP/src" "$TMP/docs"); do
  case " $others " in *" $o "*) continue ;; esac
  grep -q -- "--$o" <(grep -h -E -- "profilefs[^|;]*--$o|\`--$o" "$ROOT/README.md" "$ROOT"/docs/*.md) \
    && unknown="$unknown --$o"
done
check_eq "README.md and docs/*.md name no profilefs option the daemon lacks" "$unknown" ""

pf_done
