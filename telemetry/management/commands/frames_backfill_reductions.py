"""python manage.py frames_backfill_reductions: store the fleet reduction of older frames.

Frames written before ``entities_sum``/``entities_count`` existed are still read correctly
(kind-wide curves reduce their arrays), only more slowly. This fills the two numbers in, in
batches, so the fast path covers them too; safe to interrupt and run again.
"""

from django.core.management.base import BaseCommand

from telemetry.store.frame_reductions import frames_backfill_reductions


class Command(BaseCommand):
    help = "Fill in the stored fleet reduction of frames written before it existed."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--batch", type=int, default=200)

    def handle(self, *args, batch: int, **options) -> None:
        done = frames_backfill_reductions(batch=batch, progress=self.stdout.write)
        self.stdout.write(f"{done} frames updated.")
