"""Host measurements (`tlblab host ...`), one module each."""
