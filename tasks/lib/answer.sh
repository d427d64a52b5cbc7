# The check of a task whose prompt asks for one value ("Reply with the number only"): sourced by
# its check.sh (`. "$(dirname "$0")/../lib/answer.sh"`), then `answer_is VALUE`.
#
# The reply ($ANSWER) passes when it is short (a sentence at most: 20 words) and holds VALUE:
# for a number or version, every number in the reply is VALUE (and there is one); otherwise
# VALUE appears as a word. "0.7.3", "v0.7.3", "The version is 0.7.3." and "`tally-web`" pass;
# the whole file pasted back, a list of guesses ("7 or 8") or a tool's raw output ("Ran 7 tests
# in 0.001s") do not.
answer_is() {
  [ "$(wc -w < "$ANSWER")" -le 20 ] || return 1
  case "$1" in
    [0-9]*)
      grep -qE '[0-9]' "$ANSWER" || return 1
      ! grep -oE '[0-9]+([.][0-9]+)*' "$ANSWER" | grep -qvxF -- "$1"
      ;;
    *) grep -qwF -- "$1" "$ANSWER" ;;
  esac
}
