"""The public site omits the worked solutions of the homework exercises (issue 34).

The course guide (book/course_guide.md) assigns some exercises as homework; their keys live in the
instructor kit, so the site must not answer them one click away. After sphinx-exercise has titled
the solutions (its post-transforms, priorities 5-22), this post-transform replaces the solution of
every exercise the guide's homework columns list (scripts/reader_edition.homework_labels, the one
parser of that list) by a one-line note (reader_edition.HOMEWORK_NOTE), a ``note`` admonition like
the book's others, keeping the solution's ids so a link to it still lands. The search index is
built from the resolved tree, so it never sees the removed text. Every other exercise keeps its
solution.

The PDF follows the site (this runs for every builder, before _latex/pdf_outputs.py moves the
remaining solutions to their appendix at priority 800): `make book` copies the PDF into the
site, so a PDF with the homework solutions would serve them there. The instructor kit
(`make instructor`) carries every solution.
"""

from __future__ import annotations

import sys
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import solution_node

ROOT = Path(__file__).resolve().parents[1]  # _ext is linked into the student site's source
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.reader_edition import HOMEWORK_NOTE, homework_labels  # noqa: E402


class HomeworkSolutionsOmitted(SphinxPostTransform):
    default_priority = 100  # after sphinx-exercise's titles, before the PDF's solutions appendix

    def run(self, **kwargs):
        guide = Path(self.app.srcdir) / "book" / "course_guide.md"
        if not guide.exists():
            return
        homework = homework_labels(guide)
        for sol in list(self.document.findall(solution_node)):
            if sol.get("target_label") in homework:
                note = nodes.note("", nodes.paragraph(text=HOMEWORK_NOTE))
                sol.replace_self(note)  # takes the solution's ids, and its classes:
                note["classes"] = ["llm-homework"]  # not a dropdown, not a solution


def setup(app):
    app.add_post_transform(HomeworkSolutionsOmitted)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
