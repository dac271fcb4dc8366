"""The two-loop research pipeline of spec/004 (see docs/research.md).

>>> import kgos, kgos.research as research          # doctest: +SKIP
>>> r = research.research(kgos.Workspace(), "How do I exclude files from a tar archive?",
...                       corpus="docs/", kgs=["cli-man"], into="notes")  # doctest: +SKIP
>>> r.answer, r.citations, r.stopped_by, r.output_sha256                  # doctest: +SKIP
"""

from .control import RunControl
from .runner import DEFAULT_MODULES, ResearchRequest, ResearchResult, ResearchRunner
from .service import ReplayReport, diff_runs, replay, research, resume, run_manifest, runs, stage_snapshot
from .stages import STAGES

__all__ = ["DEFAULT_MODULES", "STAGES", "ReplayReport", "ResearchRequest", "ResearchResult", "ResearchRunner",
           "RunControl", "diff_runs", "replay", "research", "resume", "run_manifest", "runs", "stage_snapshot"]
