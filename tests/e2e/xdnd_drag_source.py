"""A second process that starts a real drag (XDND on X11) of the files given on its command line.

It shows a small window at (20, 20); a left-button press on it starts ``QDrag.exec`` with the files'
URLs. The test drives the pointer with xdotool (press here, move over the target, release).
Prints ``drag-result <action>`` when the drag ends, then keeps running (the target asks this process
for the data after the drop) until it is terminated.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QMimeData, Qt, QUrl
from PySide6.QtGui import QDrag, QMouseEvent
from PySide6.QtWidgets import QApplication, QLabel


class Source(QLabel):
    def __init__(self, files: list[str]) -> None:
        super().__init__("drag me")
        self.files = files
        self.setWindowTitle("xdnd-drag-source")
        self.setWindowFlags(Qt.WindowType.Window | Qt.WindowType.FramelessWindowHint)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setStyleSheet("background: #ffeb3b; font-size: 14pt")
        self.setGeometry(20, 20, 140, 70)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(f) for f in self.files])
        drag = QDrag(self)
        drag.setMimeData(mime)
        action = drag.exec(Qt.DropAction.CopyAction)
        # Stay alive: the target fetches the dropped data from us (the XDND selection) after the drop.
        print(f"drag-result {action.name}", flush=True)


if __name__ == "__main__":
    app = QApplication(sys.argv[:1])
    w = Source(sys.argv[1:])
    w.show()
    print("source-ready", flush=True)
    sys.exit(app.exec())
