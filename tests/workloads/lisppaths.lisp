;;; SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
;;; lisppaths.lisp - Lisp allocations from many distinct stacks, for
;;; tests/integration/test_allocsbcl3.py (a tenant making a profile's write
;;; name many frames): `sbcl --script lisppaths.lisp DEPTH SECONDS`. Path i
;;; (0 <= i < 2^DEPTH) goes DEPTH calls deep through LEFT and RIGHT, as i's
;;; bits say (each call site its own return address: 2^DEPTH stacks), and
;;; there LEAF conses a list of 40 KB (past a 32 KB allocation region: one
;;; region closed in each path). Prints "ready" once looping, then loops
;;; over the paths for SECONDS of wall clock and prints "paths N".

(defpackage :lisppaths (:use :cl))
(in-package :lisppaths)

(declaim (optimize (speed 1) (debug 1) (safety 1)))
(declaim (notinline leaf left right))

(defvar *sink* nil)

(defun leaf ()
  (setf *sink* (make-list 2560))
  1)

;; (1+ ...): not tail calls, each frame stays on the stack
(defun left (i d)
  (cond ((zerop d) (leaf))
        ((logbitp 0 i) (1+ (right (ash i -1) (1- d))))
        (t (1+ (left (ash i -1) (1- d))))))

(defun right (i d)
  (cond ((zerop d) (leaf))
        ((logbitp 0 i) (1+ (right (ash i -1) (1- d))))
        (t (1+ (left (ash i -1) (1- d))))))

(let* ((depth (parse-integer (or (second sb-ext:*posix-argv*) "14")))
       (seconds (parse-integer (or (third sb-ext:*posix-argv*) "10")))
       (end (+ (get-internal-real-time) (* seconds internal-time-units-per-second)))
       (n 0))
  (format t "ready~%")
  (finish-output)
  (loop while (< (get-internal-real-time) end)
        do (dotimes (i (ash 1 depth))
             (left i depth)
             (incf n)))
  (format t "paths ~d~%" n)
  (finish-output))
