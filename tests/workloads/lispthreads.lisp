;;; SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
;;; lispthreads.lisp - two Lisp threads consing at once, for
;;; tests/integration/test_allocsbcl2.py: `sbcl --script lispthreads.lisp N`.
;;; THREAD-A makes N lists of 100 conses (1,600 bytes each), THREAD-B N lists
;;; of 50 (800 bytes): A's bytes twice B's. Prints "done".

(defpackage :lispthreads (:use :cl))
(in-package :lispthreads)

(declaim (optimize (speed 1) (debug 1) (safety 1)))

(defvar *a* nil)
(defvar *b* nil)

(defun thread-a (n)
  (dotimes (i n)
    (setf *a* (make-list 100))))

(defun thread-b (n)
  (dotimes (i n)
    (setf *b* (make-list 50))))

(let* ((n (parse-integer (or (second sb-ext:*posix-argv*) "1000000")))
       (a (sb-thread:make-thread (lambda () (thread-a n)) :name "a"))
       (b (sb-thread:make-thread (lambda () (thread-b n)) :name "b")))
  (sb-thread:join-thread a)
  (sb-thread:join-thread b)
  (format t "done~%")
  (finish-output))
