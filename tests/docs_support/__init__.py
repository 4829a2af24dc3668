"""Support of the tests that run the documentation and the examples: a tiny scripted model
on 127.0.0.1 that every SDK talks to (``model``), and the arguments it makes up for a tool
(``arguments``). A package of its own, not conftest: test folders with a conftest of their
own would shadow ``from conftest import ...``."""
