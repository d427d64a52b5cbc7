# The check of a task whose prompt asks for one value ("Reply with the number only"): sourced by
# its check.sh (`. "$(dirname "$0")/../lib/answer.sh"`), then `answer_is VALUE`.
#
# The reply ($ANSWER) passes when it is short (a sentence at most: 20 words) and holds VALUE:
# for a number or version, the reply's numbers (whole words, a leading `v` allowed; digits
# inside a word such as `python3` are not numbers) are VALUE and nothing else; otherwise VALUE
# appears as a word. "0.7.3", "v0.7.3", "The version is 0.7.3.", "python3 compute.py prints
# 4181", "Ran 7 tests in 0.001s" and "`tally-web`" pass; the whole file pasted back or a list
# of guesses ("7 or 8") do not.
answer_is() {
  [ "$(wc -w < "$ANSWER")" -le 20 ] || return 1
  case "$1" in
    [0-9]*)
      numbers=$(sed -E 's/(^|[^[:alnum:]_])[vV]([0-9])/\1\2/g' "$ANSWER" \
        | grep -owE '[0-9]+([.][0-9]+)*')
      [ -n "$numbers" ] && ! printf '%s\n' "$numbers" | grep -qvxF -- "$1"
      ;;
    *) grep -qwF -- "$1" "$ANSWER" ;;
  esac
}
