#!/usr/bin/env bash
# Mutation testing of the measuring core (truth, scoring, evaluator, the reference memory)
# with mutmut 3, against the fast tests listed under [tool.mutmut] in pyproject.toml.
# Not part of scripts/test.sh: it runs the test subset once per mutant (tens of minutes).
#
#   scripts/mutation-run.sh                          # every mutant, then the summary
#   scripts/mutation-run.sh 'healthd.truth.*'        # only mutants whose name matches
#
# Results are kept in mutants/ and reused for functions that did not change since.
#
# Property tests run with few examples per mutant (PROPERTY_EXAMPLES, default 25
# here); a mutant they miss at that budget is re-checked by hand with more.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/mutmut ] || .venv/bin/python -m pip install -q 'mutmut>=3.3,<4'
export PROPERTY_EXAMPLES="${PROPERTY_EXAMPLES:-25}"
.venv/bin/mutmut run "$@" || true
.venv/bin/mutmut results --all true > mutants/results.txt || .venv/bin/mutmut results > mutants/results.txt
echo "tried: $(grep -vc ': not checked$' mutants/results.txt)"
for status in killed survived timeout suspicious "no tests" skipped "caught by type check"; do
  echo "${status}: $(grep -c ": ${status}\$" mutants/results.txt || true)"
done
echo "survivors:"
grep ": survived$" mutants/results.txt || true
