#!/usr/bin/env bash
# The README's first command from a fresh clone of this repository, timed from `git clone` to the figure:
#     bash tools/time_first_command.sh [work folder, default /tmp/first_command]
# It clones the repository this script is in, runs the first ```bash block of the README verbatim and prints the
# seconds of the clone and of the rest. Every file it writes is under the work folder.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-/tmp/first_command}"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
start=$(date +%s.%N)
git clone -q "$repo" sb3-maxdiff && cd sb3-maxdiff
cloned=$(date +%s.%N)
command=$(python3 -c "import re; print(re.findall(r'\`\`\`bash\n(.+?)\n\`\`\`', open('README.md').read())[0])")
echo "the README's first command: $command"
bash -c "$command" > "$work/first_command.log" 2>&1
end=$(date +%s.%N)
test -s demo_output/swimmer_paths_and_curves.png
python3 -c "print(f'clone {$cloned - $start:.1f} s, install and demo {$end - $cloned:.1f} s, total {$end - $start:.1f} s')"
