"""The metric catalogue as the Markdown table embedded in ``docs/metrics.md`` (between the two
markers; ``python -m services.metrics.catalogue_docs`` prints it, a test keeps the page equal)."""

from __future__ import annotations

from services.metrics import catalogue

DOCS_BEGIN = "<!-- metric-catalogue:begin -->"
DOCS_END = "<!-- metric-catalogue:end -->"


def markdown_table() -> str:
    """The catalogue as the Markdown table embedded in ``docs/metrics.md``."""
    lines = [
        "| key | label | unit | better | digits | job summary | seed summary | leaderboard "
        "| webhook | CLI | meaning |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in catalogue.METRICS:
        scenarios = ", ".join(s or "protocol's" for s in m.leaderboard_scenarios) or "-"
        flags = [m.summarized, m.seed_summary]
        lines.append(
            f"| `{m.key}` | {m.label} | {m.unit or '-'} | {m.direction} | {m.digits} | "
            + " | ".join("yes" if f else "-" for f in flags)
            + f" | {scenarios} | {'yes' if m.in_event else '-'} | {'yes' if m.in_table else '-'}"
            f" | {m.description} |"
        )
    lines += ["", "| result field | meaning |", "|---|---|"]
    lines += [f"| `{f.key}` | {f.description} |" for f in catalogue.RESULT_FIELDS]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table())
