"""Installs ``zz_wholetrace.pth`` beside the package: it lets a Python child process of a recorded
program record itself (``wholetrace.runtime.subprocs``; it does nothing unless the recording
set ``WHOLETRACE_CHILD`` in the environment).  Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "zz_wholetrace.pth"     # last in sorted order: site runs it after every other .pth


class BuildPyWithPth(build_py):
    """Put the .pth at the top of the wheel (it lands in site-packages)."""

    def run(self) -> None:
        super().run()
        self.copy_file(str(Path(__file__).parent / PTH), str(Path(self.build_lib) / PTH), preserve_mode=0)


cmdclass = {"build_py": BuildPyWithPth}

try:
    from setuptools.command.editable_wheel import editable_wheel
except ImportError:  # pragma: no cover - setuptools < 64
    pass
else:
    class EditableWheelWithPth(editable_wheel):
        """``pip install -e``: add the .pth to the editable wheel too."""

        def _create_wheel_file(self, bdist_wheel):  # type: ignore[no-untyped-def]
            from wheel.wheelfile import WheelFile

            path = super()._create_wheel_file(bdist_wheel)
            with WheelFile(path, "a") as wheel:
                wheel.write(str(Path(__file__).parent / PTH), PTH)
            return path

    cmdclass["editable_wheel"] = EditableWheelWithPth

setup(cmdclass=cmdclass)
